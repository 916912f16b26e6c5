import type { S3Client } from '@aws-sdk/client-s3';
import type { Config } from '@gensvc/config';
import type { Db } from '@gensvc/db';
import type { Logger } from '@gensvc/observability';
import type { Queues } from '@gensvc/queue';
import type { RequestOptions } from '@gensvc/outbound';

/** Everything the archiver's handlers use, made in main.ts (or by a test) and passed in. */
export interface ArchiverDeps {
  config: Config;
  db: Db;
  s3: S3Client;
  logger: Logger;
  /** For the callback of a task whose last output this archiver dealt with. */
  queues: Queues;
  /**
   * Outbound client settings beyond config.outbound: in production only the worker's kept-alive connections (its
   * starter adds them; Node trusts NODE_EXTRA_CA_CERTS itself);
   * tests pass their test CA, or a resolver.
   */
  outbound?: Pick<RequestOptions, 'ca' | 'lookup' | 'agents'>;
}
