// Local runs only: a CA made at each start, and the certificate the upstream-sim serves its generated outputs
// with. The archiver fetches outputs over HTTPS only (DESIGN.md §5), so the local fleet trusts this CA through
// NODE_EXTRA_CA_CERTS, as a deployment would trust a private CA; nothing else is trusted beyond Node's roots.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestCa } from '@gensvc/testing';

export interface LocalTls {
  caFile: string;
  certFile: string;
  keyFile: string;
}

export function makeLocalTls(dir: string): LocalTls {
  mkdirSync(dir, { recursive: true });
  const ca = createTestCa('gensvc local CA');
  const leaf = ca.issue(['localhost', '127.0.0.1']);
  const files = { caFile: join(dir, 'ca.pem'), certFile: join(dir, 'sim-outputs.pem'), keyFile: join(dir, 'sim-outputs.key') };
  writeFileSync(files.caFile, ca.certPem);
  writeFileSync(files.certFile, leaf.certPem);
  writeFileSync(files.keyFile, leaf.keyPem, { mode: 0o600 });
  return files;
}
