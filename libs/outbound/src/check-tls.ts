// The TLS rule of DESIGN.md §5 for a URL that is stored now and called later (callback_url): before it is accepted,
// a TLS handshake is made with the server it names, and its certificate must verify (a trusted chain, in its
// validity period, issued for the host). Like fetch-checked.ts, the socket goes to an address checkUrl already
// judged, never to a fresh resolution, and the host name only names the server (SNI and the certificate check).
// Nothing is sent over the connection: no HTTP request, so nothing the server answers (a redirect) can matter here.
import { isIP } from 'node:net';
import { connect, rootCertificates, type ConnectionOptions, type TLSSocket } from 'node:tls';
import type { CheckedUrl, ResolvedAddress } from './check-url';
import { OutboundError } from './outbound-error';

export interface CheckTlsOptions {
  /**
   * Extra trusted CA certificates (PEM), added to Node's roots, as in RequestOptions: production trusts extra CAs
   * through NODE_EXTRA_CA_CERTS, which Node applies itself; tests pass their test CA here.
   */
  ca?: string | readonly string[];
  /** The whole check, every address tried included. Default 5 s. */
  timeoutMs?: number;
}

export interface TlsVerdict {
  /** The checked address whose server completed the handshake. */
  address: ResolvedAddress;
  /** The certificate's expiry. */
  validTo: Date;
}

const DEFAULT_TIMEOUT_MS = 5_000;

/**
 * Handshakes with the URL's server and verifies its certificate, or throws an OutboundError whose message says which
 * rule failed (`tls`: self-signed, expired, another host's, not from a trusted CA; `timeout`; `connection`). The
 * addresses are tried in order, as a request would try them; one that cannot be reached gives way to the next,
 * but a certificate that fails is final.
 */
export async function checkTls(checked: CheckedUrl, opts: CheckTlsOptions = {}): Promise<TlsVerdict> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const deadline = Date.now() + timeoutMs;
  let lastError: OutboundError | undefined;
  for (const address of checked.addresses) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    try {
      return await handshake(checked, address, opts.ca, left);
    } catch (e) {
      if (!(e instanceof OutboundError) || e.reason !== 'connection') throw e;
      lastError = e;
    }
  }
  throw lastError ?? new OutboundError('timeout', `No TLS handshake with ${checked.url.host} within ${timeoutMs} ms.`);
}

function handshake(checked: CheckedUrl, address: ResolvedAddress, ca: CheckTlsOptions['ca'], timeoutMs: number): Promise<TlsVerdict> {
  const { url, hostname } = checked;
  return new Promise<TlsVerdict>((resolve, reject) => {
    let phase: 'tcp' | 'tls' = 'tcp';
    const onConnect = () => (phase = 'tls');
    const onSecure = () => {
      const cert = socket.getPeerCertificate();
      finish({ verdict: { address, validTo: new Date(cert.valid_to) } });
    };
    const onError = (e: Error) => finish({ error: tlsFailure(e, phase, url, address) });
    const onClose = () =>
      finish({
        error:
          phase === 'tcp'
            ? new OutboundError('connection', `${url.host} (${address.address}) closed the connection before it was made.`)
            : new OutboundError('tls', `${url.host} closed the connection during the TLS handshake.`),
      });
    const finish = (outcome: { verdict: TlsVerdict } | { error: OutboundError }) => {
      clearTimeout(timer);
      socket.off('connect', onConnect).off('secureConnect', onSecure).off('error', onError).off('close', onClose);
      // A late error of the discarded socket must not go unhandled.
      socket.on('error', () => {});
      if ('verdict' in outcome) {
        // A clean close (close_notify) lets the server finish its side of the handshake rather than see a reset; a
        // server that does not close in turn is cut off shortly after.
        socket.end();
        setTimeout(() => socket.destroy(), 1_000).unref();
        resolve(outcome.verdict);
      } else {
        socket.destroy();
        reject(outcome.error);
      }
    };
    const options: ConnectionOptions = {
      // The checked address (an IP literal), never the name: no resolution happens on this socket.
      host: address.address,
      port: checked.port,
      // SNI carries names only; for an IP-literal URL the certificate is matched against the IP (Node checks the
      // identity against servername, or host when there is none).
      servername: isIP(hostname) ? undefined : hostname,
      rejectUnauthorized: true,
      minVersion: 'TLSv1.2',
      ...(ca !== undefined ? { ca: [...rootCertificates, ...(typeof ca === 'string' ? [ca] : ca)] } : {}),
    };
    const socket: TLSSocket = connect(options);
    const timer = setTimeout(
      () => finish({ error: new OutboundError('timeout', `No TLS handshake with ${url.host} (${address.address}) within ${timeoutMs} ms.`) }),
      timeoutMs,
    );
    socket.once('connect', onConnect).once('secureConnect', onSecure).once('error', onError).once('close', onClose);
  });
}

/** What each certificate failure means, in words a caller can act on. */
const CERT_RULES: Record<string, string> = {
  DEPTH_ZERO_SELF_SIGNED_CERT: 'is self-signed; it must be issued by a trusted certificate authority',
  SELF_SIGNED_CERT_IN_CHAIN: 'chains to a self-signed root that is not trusted; it must be issued by a trusted certificate authority',
  CERT_HAS_EXPIRED: 'has expired',
  CERT_NOT_YET_VALID: 'is not valid yet',
  ERR_TLS_CERT_ALTNAME_INVALID: 'is not valid for this host name',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'is not issued by a trusted certificate authority (or the server does not send its intermediate certificates)',
  UNABLE_TO_GET_ISSUER_CERT: 'is not issued by a trusted certificate authority',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'is not issued by a trusted certificate authority',
  CERT_REVOKED: 'has been revoked',
  CERT_SIGNATURE_FAILURE: 'has an invalid signature',
};

function tlsFailure(e: Error, phase: 'tcp' | 'tls', url: URL, address: ResolvedAddress): OutboundError {
  const code = (e as NodeJS.ErrnoException).code ?? '';
  const rule = CERT_RULES[code];
  if (rule) return new OutboundError('tls', `The TLS certificate of ${url.host} ${rule} (${code}).`, { cause: e });
  if (phase === 'tls' || /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|ERR_OSSL_)/.test(code)) {
    return new OutboundError('tls', `The TLS handshake with ${url.host} failed (${code || e.message}).`, { cause: e });
  }
  if (code === 'ETIMEDOUT') return new OutboundError('timeout', `Connecting to ${url.host} (${address.address}) timed out.`, { cause: e });
  return new OutboundError('connection', `Could not connect to ${url.host} (${address.address}): ${code || e.message}.`, { cause: e });
}
