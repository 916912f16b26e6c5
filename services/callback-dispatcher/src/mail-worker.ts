import { defineWorker } from '@gensvc/queue';
import type { Worker } from 'bullmq';
import type { WorkerConnection } from './dispatcher-worker';
import { mailSend, type MailDeps } from './handlers/mail-send';

/** Mails at once per process: a few pooled SMTP connections carry them (libs/mail). */
const MAIL_CONCURRENCY = 4;

/** The `mail` queue's worker: one handler, `mail.send`. */
export function startMailWorker(deps: MailDeps, conn: WorkerConnection): Worker {
  return defineWorker({
    queue: 'mail',
    connection: conn.connection,
    prefix: conn.prefix,
    concurrency: MAIL_CONCURRENCY,
    logger: conn.logger ?? deps.logger,
    handlers: { 'mail.send': mailSend(deps) },
  });
}
