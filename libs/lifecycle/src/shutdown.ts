// Ordered shutdown (STYLE.md convention 5): stop taking work, let in-flight work finish, close clients, flush
// telemetry. Each phase has its own timeout so one stuck phase cannot hold the others; a second signal exits at once.

export interface ShutdownPhase {
  name: string;
  timeoutMs: number;
  run: () => Promise<void> | void;
}

export interface ShutdownLog {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface Shutdown {
  /** Runs the phases once; later calls return the same promise. */
  run(reason: string): Promise<void>;
}

export function createShutdown(phases: ShutdownPhase[], log: ShutdownLog): Shutdown {
  let running: Promise<void> | undefined;
  return {
    run(reason) {
      running ??= (async () => {
        log.info({ reason }, 'shutting down');
        for (const phase of phases) {
          const started = Date.now();
          let timer: NodeJS.Timeout | undefined;
          const timeout = new Promise<'timeout'>((resolve) => {
            timer = setTimeout(() => resolve('timeout'), phase.timeoutMs);
          });
          try {
            const outcome = await Promise.race([
              Promise.resolve()
                .then(phase.run)
                .then(() => 'done' as const),
              timeout,
            ]);
            if (outcome === 'timeout')
              log.error({ phase: phase.name, timeoutMs: phase.timeoutMs }, 'shutdown phase timed out');
            else log.info({ phase: phase.name, ms: Date.now() - started }, 'shutdown phase done');
          } catch (error) {
            log.error({ phase: phase.name, err: error }, 'shutdown phase failed');
          } finally {
            clearTimeout(timer);
          }
        }
      })();
      return running;
    },
  };
}

/** SIGINT/SIGTERM run the shutdown and exit; a second signal exits at once with status 1. */
export function exitOnSignals(shutdown: Shutdown, exit: (code: number) => void = (code) => process.exit(code)) {
  let signalled = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (signalled) return exit(1);
    signalled = true;
    void shutdown.run(signal).then(() => exit(0));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}
