// Local runs only: a CA made at each start, and the certificate the upstream-sim serves its generated outputs
// with. The archiver fetches outputs over HTTPS only (DESIGN.md §5), so the local fleet trusts this CA through
// NODE_EXTRA_CA_CERTS, as a deployment would trust a private CA; nothing else is trusted beyond Node's roots.
// NODE_EXTRA_CA_CERTS names one file, so a person's own value (a private CA for their local HTTPS receiver) is
// not replaced: the fleet's services get a bundle of theirs first, then the fleet's CA.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestCa } from '@gensvc/testing';

export interface LocalTls {
  caFile: string;
  certFile: string;
  keyFile: string;
  /** What the fleet's services get as NODE_EXTRA_CA_CERTS: the user's certificates (if any), then the fleet's CA. */
  trustFile: string;
}

export function makeLocalTls(dir: string, userExtraCaCerts?: string): LocalTls {
  mkdirSync(dir, { recursive: true });
  const ca = createTestCa('gensvc local CA');
  const leaf = ca.issue(['localhost', '127.0.0.1']);
  const files = {
    caFile: join(dir, 'ca.pem'),
    certFile: join(dir, 'sim-outputs.pem'),
    keyFile: join(dir, 'sim-outputs.key'),
    trustFile: join(dir, 'ca-bundle.pem'),
  };
  writeFileSync(files.caFile, ca.certPem);
  writeFileSync(files.certFile, leaf.certPem);
  writeFileSync(files.keyFile, leaf.keyPem, { mode: 0o600 });
  writeFileSync(files.trustFile, caBundle(userExtraCaCerts, ca.certPem));
  return files;
}

/**
 * The user's NODE_EXTRA_CA_CERTS file, then the fleet's CA. Node only warns about an unreadable file and goes on
 * without it, which would surface much later as "unable to verify" on a callback: here it stops the start instead.
 */
function caBundle(userFile: string | undefined, fleetCaPem: string): string {
  if (!userFile) return fleetCaPem;
  let theirs: string;
  try {
    theirs = readFileSync(userFile, 'utf8');
  } catch (e) {
    throw new Error(
      `NODE_EXTRA_CA_CERTS names ${userFile}, which cannot be read ` +
        `(${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): fix the path or unset it.`,
    );
  }
  if (!theirs.includes('-----BEGIN CERTIFICATE-----')) {
    throw new Error(
      `NODE_EXTRA_CA_CERTS names ${userFile}, which holds no PEM certificate ("-----BEGIN CERTIFICATE-----").`,
    );
  }
  return `${theirs.trimEnd()}\n${fleetCaPem}`;
}
