// Boot only: config -> deps -> start -> shutdown phases. The sim is not a gensvc service: it reads PORT and
// LOG_LEVEL alone and needs no database, queue or telemetry.
import { createShutdown, exitOnSignals } from '@gensvc/lifecycle';
import { createLogger } from '@gensvc/observability';
import { startSim } from './sim';

const SERVICE = 'upstream-sim';
const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function readConfig(env: NodeJS.ProcessEnv): { port: number; logLevel: string } {
  const problems: string[] = [];
  const portText = env.PORT ?? '8090';
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65535) problems.push(`PORT must be an integer 0..65535, got "${portText}"`);
  const logLevel = env.LOG_LEVEL ?? 'info';
  if (!LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL must be one of ${LEVELS.join(', ')}, got "${logLevel}"`);
  if (problems.length) {
    process.stderr.write(`${SERVICE}: invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}\n`);
    process.exit(1);
  }
  return { port, logLevel };
}

async function main() {
  const config = readConfig(process.env);
  const logger = createLogger({ service: SERVICE, level: config.logLevel });
  const sim = await startSim({
    port: config.port,
    host: '0.0.0.0',
    onRequest: logger.isLevelEnabled('debug') ? (record) => logger.debug({ request: record }, 'upstream request') : undefined,
  });
  logger.info({ port: Number(new URL(sim.url).port), url: sim.url }, 'upstream-sim listening');

  const shutdown = createShutdown(
    [
      { name: 'stop taking HTTP', timeoutMs: 5_000, run: () => sim.close() },
      { name: 'flush logs', timeoutMs: 1_000, run: () => new Promise<void>((resolve) => logger.flush(() => resolve())) },
    ],
    logger,
  );
  exitOnSignals(shutdown);
}

main().catch((err) => {
  process.stderr.write(`${SERVICE}: failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
