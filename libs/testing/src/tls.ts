// TLS for tests: a test CA, certificates it issues (valid, expired) or that sign themselves, and a local HTTPS server
// using them. Tests trust the CA through the client's `ca` option (the stand-in for NODE_EXTRA_CA_CERTS) or write it
// to a file for NODE_EXTRA_CA_CERTS, and let 127.0.0.1 through OUTBOUND_ALLOW_CIDRS. node-forge is loaded on first
// use, so test files that make no certificate never load it.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { isIP } from 'node:net';
import type * as Forge from 'node-forge';

export interface CertPair {
  certPem: string;
  keyPem: string;
}

export interface TestCa extends CertPair {
  /** A leaf for these host names and IP addresses, signed by this CA; `expired` puts its validity in the past. */
  issue(hosts: readonly string[], opts?: { expired?: boolean }): CertPair;
}

export const TEST_HOSTS = ['localhost', '127.0.0.1', '127.0.0.2', '::1'] as const;

// eslint-disable-next-line @typescript-eslint/no-require-imports
const forge = (): typeof Forge => require('node-forge');

function rsaKeys() {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
  });
  return { privateKey, publicKey };
}

function makeCert(opts: {
  subject: string;
  publicKeyPem: string;
  signer: { keyPem: string; subject: string } | 'self';
  signerKeyPem: string;
  ca: boolean;
  hosts?: readonly string[];
  expired?: boolean;
}): string {
  const { pki, md } = forge();
  const cert = pki.createCertificate();
  cert.publicKey = pki.publicKeyFromPem(opts.publicKeyPem);
  // A positive serial: the high bit of the first byte clear.
  cert.serialNumber = `01${randomBytes(15).toString('hex')}`;
  const day = 86_400_000;
  const now = Date.now();
  cert.validity.notBefore = new Date(opts.expired ? now - 30 * day : now - day);
  cert.validity.notAfter = new Date(opts.expired ? now - day : now + 30 * day);
  cert.setSubject([{ name: 'commonName', value: opts.subject }]);
  cert.setIssuer([{ name: 'commonName', value: opts.signer === 'self' ? opts.subject : opts.signer.subject }]);
  const extensions: object[] = [
    { name: 'basicConstraints', cA: opts.ca, critical: true },
    opts.ca
      ? { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true }
      : { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ];
  if (!opts.ca) {
    extensions.push({ name: 'extKeyUsage', serverAuth: true });
    extensions.push({
      name: 'subjectAltName',
      altNames: (opts.hosts ?? []).map((h) => (isIP(h) ? { type: 7, ip: h } : { type: 2, value: h })),
    });
  }
  cert.setExtensions(extensions);
  cert.sign(pki.privateKeyFromPem(opts.signerKeyPem), md.sha256.create());
  return pki.certificateToPem(cert);
}

/** A new CA (about 0.1 s: one RSA key). */
export function createTestCa(name = 'gensvc test CA'): TestCa {
  const keys = rsaKeys();
  const certPem = makeCert({
    subject: name,
    publicKeyPem: keys.publicKey,
    signer: 'self',
    signerKeyPem: keys.privateKey,
    ca: true,
  });
  return {
    certPem,
    keyPem: keys.privateKey,
    issue(hosts, opts = {}) {
      const leaf = rsaKeys();
      const leafPem = makeCert({
        subject: hosts[0] ?? 'localhost',
        publicKeyPem: leaf.publicKey,
        signer: { keyPem: keys.privateKey, subject: name },
        signerKeyPem: keys.privateKey,
        ca: false,
        hosts,
        expired: opts.expired,
      });
      return { certPem: leafPem, keyPem: leaf.privateKey };
    },
  };
}

/** A leaf that signs itself: what a client must refuse whatever it trusts. */
export function selfSignedCert(hosts: readonly string[] = TEST_HOSTS): CertPair {
  const keys = rsaKeys();
  const certPem = makeCert({
    subject: hosts[0] ?? 'localhost',
    publicKeyPem: keys.publicKey,
    signer: 'self',
    signerKeyPem: keys.privateKey,
    ca: false,
    hosts,
  });
  return { certPem, keyPem: keys.privateKey };
}

let shared: { ca: TestCa; leaf: CertPair } | undefined;

/** One CA and one leaf for TEST_HOSTS per process: key generation is the slow part of starting a server. */
export function sharedTestCa(): { ca: TestCa; leaf: CertPair } {
  if (!shared) {
    const ca = createTestCa();
    shared = { ca, leaf: ca.issue(TEST_HOSTS) };
  }
  return shared;
}

export interface TlsTestServer {
  /** https://<host>:<port> (no trailing slash). */
  url: string;
  host: string;
  port: number;
  /** The CA to trust (pass as `ca` to the client, or write it to a file for NODE_EXTRA_CA_CERTS). */
  caPem: string;
  server: Server;
  /** Every request the server received, in order. */
  requests: { method: string; url: string; headers: IncomingMessage['headers'] }[];
  close(): Promise<void>;
}

export interface TlsServerOptions {
  /** Where to listen; default 127.0.0.1. */
  host?: string;
  /** Default: a free one. */
  port?: number;
  /** The certificate to serve: default a leaf of the shared test CA valid for TEST_HOSTS. */
  cert?: CertPair;
}

/** An HTTPS server on a free port serving `handler`, with a certificate of the shared test CA unless told otherwise. */
export async function startTlsServer(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  opts: TlsServerOptions = {},
): Promise<TlsTestServer> {
  const { ca, leaf } = sharedTestCa();
  const cert = opts.cert ?? leaf;
  const requests: TlsTestServer['requests'] = [];
  const server = createServer({ cert: cert.certPem, key: cert.keyPem }, (req, res) => {
    requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    handler(req, res);
  });
  // Clients that fail the handshake (as they should) make the server emit this; it is not an error of the test.
  server.on('tlsClientError', () => {});
  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://${isIP(host) === 6 ? `[${host}]` : host}:${port}`,
    host,
    port,
    caPem: ca.certPem,
    server,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
