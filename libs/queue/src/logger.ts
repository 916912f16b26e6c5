/** The slice of a pino logger the queue code writes to. */
export interface QueueLogger {
  info(obj: Record<string, unknown>, msg?: string): void;
  warn(obj: Record<string, unknown>, msg?: string): void;
  error(obj: Record<string, unknown>, msg?: string): void;
}

/**
 * Used when no logger is given. BullMQ classes emit 'error' (lost connections, failed lock renewals) and an
 * EventEmitter without an 'error' listener throws, so something must listen; errors at least reach stderr.
 */
export const stderrLogger: QueueLogger = {
  info() {},
  warn() {},
  error(obj, msg) {
    console.error(`[queue] ${msg ?? ''}`, obj);
  },
};
