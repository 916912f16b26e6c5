// The TLS rule of DESIGN.md §5 for a URL that is stored now and called later (callback_url): before it is accepted,
// a TLS handshake is made with the server it names, and its certificate must verify (a trusted chain, in its
// validity period, issued for the host). The socket is opened as fetch-checked.ts opens a request's
// (tlsConnectOptions): to an address checkUrl already judged, the host name only naming the server.
// Nothing is sent over the connection: no HTTP request, so nothing the server answers (a redirect) can matter here.
import { connect, type TLSSocket } from 'node:tls';
import type { CheckedUrl, ResolvedAddress } from './check-url';
import { connectFailure, tlsConnectOptions, type RequestOptions } from './fetch-checked';
import { OutboundError } from './outbound-error';

export interface CheckTlsOptions {
  /** Extra trusted CA certificates (PEM), as RequestOptions.ca. */
  ca?: RequestOptions['ca'];
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

function handshake(
  checked: CheckedUrl,
  address: ResolvedAddress,
  ca: CheckTlsOptions['ca'],
  timeoutMs: number,
): Promise<TlsVerdict> {
  const { url } = checked;
  return new Promise<TlsVerdict>((resolve, reject) => {
    let phase: 'tcp' | 'tls' = 'tcp';
    const onConnect = () => (phase = 'tls');
    const onSecure = () => {
      const cert = socket.getPeerCertificate();
      finish({ verdict: { address, validTo: new Date(cert.valid_to) } });
    };
    const onError = (e: Error) => finish({ error: connectFailure(e, phase, url, address) });
    const onClose = () =>
      finish({
        error:
          phase === 'tcp'
            ? new OutboundError(
                'connection',
                `${url.host} (${address.address}) closed the connection before it was made.`,
              )
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
    const socket: TLSSocket = connect(tlsConnectOptions(checked, address, ca));
    const timer = setTimeout(
      () =>
        finish({
          error: new OutboundError(
            'timeout',
            `No TLS handshake with ${url.host} (${address.address}) within ${timeoutMs} ms.`,
          ),
        }),
      timeoutMs,
    );
    socket.once('connect', onConnect).once('secureConnect', onSecure).once('error', onError).once('close', onClose);
  });
}
