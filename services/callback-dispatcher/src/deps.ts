import type { Config } from '@gensvc/config';
import type { Db, SecretBox } from '@gensvc/db';
import type { Logger } from '@gensvc/observability';
import type { RequestOptions } from '@gensvc/outbound';
import type { Queues } from '@gensvc/queue';

/** Everything the dispatcher's handler uses, made in main.ts (or by a test) and passed in. */
export interface DispatcherDeps {
  config: Config;
  db: Db;
  /** Opens the workspaces' signing secrets (stored sealed) for the attempt that signs with them. */
  secrets: SecretBox;
  /** Where a failed attempt schedules the next one. */
  queues: Queues;
  logger: Logger;
  /**
   * Outbound client settings beyond config.outbound: in production only the worker's kept-alive connections (its
   * starter adds them; Node trusts NODE_EXTRA_CA_CERTS itself);
   * tests pass their test CA, or a resolver playing a hostile DNS.
   */
  outbound?: Pick<RequestOptions, 'ca' | 'lookup' | 'agents'>;
}
