// Boot only: config -> deps -> start -> shutdown phases. The sim is not a gensvc service: it reads PORT, LOG_LEVEL,
// SIM_TASK_MS and the SIM_OUTPUTS_* variables alone and needs no database, queue or telemetry.
import { readFileSync } from 'node:fs';
import { createShutdown, exitOnSignals } from '@gensvc/lifecycle';
import { createLogger } from '@gensvc/observability';
import { startSim } from './sim';

const SERVICE = 'upstream-sim';
const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

interface Config {
  port: number;
  logLevel: string;
  taskDurationMs: number;
  /** The HTTPS outputs listener, when SIM_OUTPUTS_TLS_CERT_FILE and SIM_OUTPUTS_TLS_KEY_FILE are set. */
  outputs?: { tls: { cert: string; key: string }; port: number };
  /** SIM_REPLICATE_WEBHOOK_SECRET: the whsec_ secret Replicate webhooks are signed with (default: the sim's own). */
  replicateWebhookSecret?: string;
}

function readConfig(env: NodeJS.ProcessEnv): Config {
  const problems: string[] = [];
  const int = (name: string, fallback: string, max: number): number => {
    const text = env[name] ?? fallback;
    const value = Number(text);
    if (!/^\d+$/.test(text) || value > max) problems.push(`${name} must be an integer 0..${max}, got "${text}"`);
    return value;
  };
  const port = int('PORT', '8090', 65535);
  const logLevel = env.LOG_LEVEL ?? 'info';
  if (!LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL must be one of ${LEVELS.join(', ')}, got "${logLevel}"`);
  const taskDurationMs = int('SIM_TASK_MS', '300', 3_600_000);
  const outputsPort = int('SIM_OUTPUTS_PORT', '0', 65535);
  const certFile = env.SIM_OUTPUTS_TLS_CERT_FILE;
  const keyFile = env.SIM_OUTPUTS_TLS_KEY_FILE;
  const read = (name: string, file: string) => {
    try {
      return readFileSync(file, 'utf8');
    } catch (error) {
      problems.push(`${name} cannot be read: ${(error as Error).message}`);
      return '';
    }
  };
  let outputs: Config['outputs'];
  if (certFile || keyFile) {
    if (!certFile || !keyFile) problems.push('SIM_OUTPUTS_TLS_CERT_FILE and SIM_OUTPUTS_TLS_KEY_FILE go together');
    else
      outputs = {
        tls: { cert: read('SIM_OUTPUTS_TLS_CERT_FILE', certFile), key: read('SIM_OUTPUTS_TLS_KEY_FILE', keyFile) },
        port: outputsPort,
      };
  } else if (env.SIM_OUTPUTS_PORT !== undefined) {
    problems.push('SIM_OUTPUTS_PORT needs SIM_OUTPUTS_TLS_CERT_FILE and SIM_OUTPUTS_TLS_KEY_FILE');
  }
  const replicateWebhookSecret = env.SIM_REPLICATE_WEBHOOK_SECRET;
  if (replicateWebhookSecret !== undefined && !/^whsec_[A-Za-z0-9+/]+=*$/.test(replicateWebhookSecret))
    problems.push('SIM_REPLICATE_WEBHOOK_SECRET must be whsec_<base64>');
  if (problems.length) {
    process.stderr.write(`${SERVICE}: invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}\n`);
    process.exit(1);
  }
  return { port, logLevel, taskDurationMs, outputs, replicateWebhookSecret };
}

async function main() {
  const config = readConfig(process.env);
  const logger = createLogger({ service: SERVICE, level: config.logLevel });
  const sim = await startSim({
    port: config.port,
    host: '0.0.0.0',
    taskDurationMs: config.taskDurationMs,
    replicateWebhookSecret: config.replicateWebhookSecret,
    outputs: config.outputs,
    onRequest: logger.isLevelEnabled('debug')
      ? (record) => logger.debug({ request: record }, 'upstream request')
      : undefined,
  });
  logger.info(
    {
      port: Number(new URL(sim.url).port),
      url: sim.url,
      outputsUrl: sim.outputsUrl,
      taskDurationMs: config.taskDurationMs,
    },
    'upstream-sim listening',
  );

  const shutdown = createShutdown(
    [
      { name: 'stop taking HTTP', timeoutMs: 5_000, run: () => sim.close() },
      {
        name: 'flush logs',
        timeoutMs: 1_000,
        run: () => new Promise<void>((resolve) => logger.flush(() => resolve())),
      },
    ],
    logger,
  );
  exitOnSignals(shutdown);
}

main().catch((err) => {
  process.stderr.write(
    `${SERVICE}: failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});
