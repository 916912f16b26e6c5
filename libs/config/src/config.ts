// Every variable of DESIGN.md §6, parsed once at start (STYLE.md convention 4). A bad value stops the process
// with a list of every problem, not just the first.
import { isIP } from 'node:net';
import { z } from 'zod';
import { parseDuration } from './duration';
import { encryptionKeys, type EncryptionKey } from './encryption-keys';
import { parseRedisTarget, redisTargetUrl } from './redis-url';

const port = z.coerce.number().int().min(1).max(65535);
const bool = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');
const concurrency = z.coerce.number().int().min(1).max(1000);
/** A URL whose scheme is one of `protocols` (e.g. ['redis:', 'rediss:']). */
export const urlWithScheme = (protocols: string[]) =>
  z.string().refine(
    (v) => {
      try {
        return protocols.includes(new URL(v).protocol);
      } catch {
        return false;
      }
    },
    { message: `must be a URL with scheme ${protocols.map((p) => p.replace(':', '')).join(' or ')}` },
  );

/**
 * What DATABASE_URL reaches: Postgres itself (`none`), or a pooler in transaction mode (`transaction`: PgBouncer,
 * RDS Proxy, Supavisor), where consecutive transactions of one client may run on different server connections.
 */
export const databasePooler = z.enum(['none', 'transaction']);
export type DatabasePooler = z.output<typeof databasePooler>;

/**
 * DATABASE_POOLER, else `transaction` when the URL says `pgbouncer=true` (Prisma's convention), else `none`.
 */
export function poolerOf(databaseUrl: string, pooler: DatabasePooler | undefined): DatabasePooler {
  return pooler ?? (new URL(databaseUrl).searchParams.get('pgbouncer') === 'true' ? 'transaction' : 'none');
}

/** Prefix of every Redis key and channel of one deployment. */
export const queuePrefix = z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be 1-64 letters, digits, "_", "." or "-"');

const durations = z.string().transform((value, ctx) => {
  const parts = value.split(',').map((s) => s.trim());
  const ms = parts.map(parseDuration);
  if (parts.length === 0 || ms.some((v) => v === null)) {
    ctx.addIssue({ code: 'custom', message: 'must be a comma-separated list of durations such as "0,30s,2m,10m,1h"' });
    return z.NEVER;
  }
  return ms as number[];
});

const duration = z.string().transform((value, ctx) => {
  const ms = parseDuration(value.trim());
  if (ms === null) {
    ctx.addIssue({ code: 'custom', message: 'must be a duration such as "500ms", "30s", "2m" or "1h"' });
    return z.NEVER;
  }
  return ms;
});

/** A wait on an HTTP client: never 0, which Node reads as "no limit". */
const clientTimeout = duration.pipe(z.number().min(100, 'must be at least 100ms').max(3_600_000, 'must be at most 1h'));
const isCidr = (cidr: string) => {
  const [addr, bits, extra] = cidr.split('/');
  const family = isIP(addr ?? '');
  const max = family === 6 ? 128 : 32;
  return family !== 0 && extra === undefined && (bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= max));
};
const cidrs = z.string().transform((value, ctx) => {
  const list = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const cidr of list) {
    if (!isCidr(cidr)) ctx.addIssue({ code: 'custom', message: `"${cidr}" is not an address or CIDR range` });
  }
  return list;
});

/** An address (`a@b`), or a display name and an address (`Name <a@b>`); no line breaks (header injection). */
const MAILBOX = /^(?:[^\r\n<>@]*<[^\s<>@]+@[^\s<>@]+>|[^\s<>@]+@[^\s<>@]+)$/;

/** Express's `trust proxy` names for address ranges. */
const PROXY_RANGES = ['loopback', 'linklocal', 'uniquelocal'];
/**
 * Express's `trust proxy` setting: false (off), true (every hop), a hop count, or addresses, ranges and range names.
 */
export type TrustProxy = boolean | number | string[];
const trustProxy = z.string().transform((value, ctx): TrustProxy => {
  const v = value.trim();
  if (v === 'false' || v === 'true') return v === 'true';
  if (/^\d+$/.test(v)) return Number(v);
  const list = v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const entry of list) {
    if (!PROXY_RANGES.includes(entry) && !isCidr(entry)) {
      ctx.addIssue({
        code: 'custom',
        message:
          `"${entry}" is not true, false, a hop count, an address, a CIDR range ` +
          `or one of ${PROXY_RANGES.join(', ')}`,
      });
    }
  }
  return list;
});

export const envSchema = z.object({
  PORT: port.default(8080),
  PUBLIC_BASE_URL: urlWithScheme(['http:', 'https:']).optional(),
  FILE_BASE_URL: urlWithScheme(['http:', 'https:']).optional(),
  DATABASE_URL: urlWithScheme(['postgres:', 'postgresql:']),
  DATABASE_POOLER: databasePooler.optional(),
  DIRECT_DATABASE_URL: urlWithScheme(['postgres:', 'postgresql:']).optional(),
  REDIS_URL: z.string().superRefine((v, ctx) => {
    const target = parseRedisTarget(v);
    if ('error' in target) ctx.addIssue({ code: 'custom', message: target.error });
  }),
  /** REDIS_URL's one node is a seed of a Redis Cluster (the same as naming it `redis+cluster://host:port`). */
  REDIS_CLUSTER: bool.default(false),
  QUEUE_PREFIX: queuePrefix.default('gensvc'),
  S3_ENDPOINT: urlWithScheme(['http:', 'https:']).optional(),
  S3_REGION: z.string().min(1).default('us-east-1'),
  S3_BUCKET: z
    .string()
    .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be a valid S3 bucket name')
    .default('gensvc'),
  S3_ACCESS_KEY_ID: z.string().min(1).optional(),
  S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  S3_FORCE_PATH_STYLE: bool.default(false),
  SIGNING_SECRET: z.string().min(32, 'must be at least 32 characters'),
  /** Seals secrets at rest: `<key id>:<base64 32 bytes>,...`, the first seals, all open (encryption-keys.ts). */
  ENCRYPTION_KEYS: encryptionKeys,
  CALLBACK_RETRY_SCHEDULE: durations.default([0, 30_000, 120_000, 600_000, 3_600_000]),
  CALLBACK_TIMEOUT_MS: z.coerce.number().int().min(1).max(600_000).default(10_000),
  /** A generation task not finished this long after creation fails with upstream_timeout. */
  TASK_DEADLINE: duration.default(30 * 60_000),
  /** Waits between polls of a running task: the n-th poll waits the n-th value, the last repeats. */
  TASK_POLL_SCHEDULE: durations.default([1_000, 1_000, 2_000, 2_000, 5_000]),
  /**
   * Callers each edge holds at once waiting for their task (`Prefer: wait`); past it a creation answers 202 at once.
   * A waiter costs an open socket and a map entry, no worker slot and no store connection.
   */
  TASK_WAIT_MAX_WAITERS: z.coerce.number().int().min(0).max(100_000).default(1_000),
  /** How many times a task whose provider job failed for a retryable reason is given a new job before it fails. */
  TASK_MAX_RESUBMITS: z.coerce.number().int().min(0).max(10).default(2),
  /** How often the task-runner looks for tasks and callbacks whose job vanished (Redis flushed or restarted). */
  RECONCILE_INTERVAL: duration.default(30_000),
  OUTBOUND_ALLOW_CIDRS: cidrs.default([]),
  /**
   * The SMTP server mail goes through (smtp://user:pass@host:587 with STARTTLS when offered, smtps:// for TLS from the
   * first byte). Unset: npm start and npm test bring up a local one; the callback-dispatcher, which sends, needs it.
   */
  SMTP_URL: urlWithScheme(['smtp:', 'smtps:']).optional(),
  /** The sender of every mail: an address, or `Name <address>`. */
  MAIL_FROM: z
    .string()
    .trim()
    .max(320)
    .refine((v) => MAILBOX.test(v), 'must be an e-mail address or "Name <address>"')
    .default('gensvc <no-reply@localhost>'),
  /**
   * Which proxies in front of the edge are trusted to say the client's address (X-Forwarded-For), as Express's
   * `trust proxy`: off by default (the socket's address is the client's), a hop count, or addresses and CIDR ranges.
   */
  TRUST_PROXY: trustProxy.default(false),
  /** Password hashes (scrypt, 64 MiB each) run at once per edge process; the pod's memory limit is sized to it. */
  PASSWORD_HASH_CONCURRENCY: concurrency.default(1),
  EVALUATE_CONCURRENCY: concurrency.default(50),
  TASK_RUNNER_CONCURRENCY: concurrency.default(20),
  ARCHIVER_CONCURRENCY: concurrency.default(4),
  /** An attempt mostly waits (the receiver, Postgres); the attempts in flight share their statements (group commit). */
  CALLBACK_DISPATCHER_CONCURRENCY: concurrency.default(64),
  OTEL_EXPORTER_OTLP_ENDPOINT: urlWithScheme(['http:', 'https:']).optional(),
  /** The share of new traces recorded (parent-based ratio sampling). */
  OTEL_TRACES_SAMPLER_ARG: z.coerce.number().min(0).max(1).default(0.1),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** How long an edge trusts a cached key look-up while its invalidation channel is connected. */
  KEY_CACHE_TTL_MS: z.coerce.number().int().min(0).max(3_600_000).default(30_000),
  /** The internal ops port of every service: /healthz, /readyz, /metrics. 0: any free port (tests, npm start). */
  OPS_PORT: z.coerce.number().int().min(0).max(65535).default(9464),
  /**
   * `production` (the image sets it) makes FILE_BASE_URL required: the default, S3_ENDPOINT, is an internal address.
   */
  NODE_ENV: z.string().optional(),
  /** The edge's slow-client bounds: request headers, the longest pause inside a body, whole bodies. */
  HTTP_HEADERS_TIMEOUT: clientTimeout.default(10_000),
  HTTP_BODY_IDLE_TIMEOUT: clientTimeout.default(15_000),
  HTTP_JSON_BODY_TIMEOUT: clientTimeout.default(60_000),
  HTTP_UPLOAD_TIMEOUT: clientTimeout.default(15 * 60_000),
  HTTP_KEEP_ALIVE_TIMEOUT: clientTimeout.default(65_000),
  /**
   * The public base URL providers call back (https://api.example.com): set, tasks ask Replicate and fal for a webhook
   * to `<base>/v1/provider-webhooks/<provider>/<task id>` when their job ends, and poll only as the fallback.
   * Unset: off.
   */
  PROVIDER_WEBHOOK_BASE_URL: urlWithScheme(['http:', 'https:']).optional(),
  /** The Replicate account's webhook signing secret (whsec_..., GET /v1/webhooks/default/secret), for its webhooks. */
  REPLICATE_WEBHOOK_SECRET: z
    .string()
    .regex(/^whsec_[A-Za-z0-9+/]+=*$/, 'must be whsec_<base64>')
    .optional(),
  /** Where fal publishes its webhook signing keys (a JWKS of Ed25519 keys); fetched through libs/outbound, so https. */
  FAL_WEBHOOK_JWKS_URL: urlWithScheme(['https:']).default('https://rest.alpha.fal.ai/.well-known/jwks.json'),
  /** The fal account's user id, which fal signs into each webhook (x-fal-webhook-user-id); fal webhooks need it. */
  FAL_WEBHOOK_USER_ID: z
    .string()
    .regex(/^[\x21-\x7e]{1,200}$/, 'must be 1 to 200 printable ASCII characters')
    .optional(),
  /**
   * How long a task whose provider was asked for a webhook waits for it, unmoved, before the task-runner's reconciler
   * polls it (no poll job is made until then: the poll is only the fallback).
   */
  TASK_POLL_WEBHOOK_FALLBACK: duration.default(30_000),
});

export type Env = z.input<typeof envSchema>;

export interface Config {
  port: number;
  publicBaseUrl: string;
  fileBaseUrl: string;
  databaseUrl: string;
  /** Whether DATABASE_URL is a transaction-mode pooler: then no named prepared statement or session state. */
  databasePooler: DatabasePooler;
  /** Where migrations run: DIRECT_DATABASE_URL (Postgres itself, past the pooler), else DATABASE_URL. */
  directDatabaseUrl: string;
  /** One Redis (`redis://`), or a cluster always in the `redis+cluster://h:p,h:p` form (redis-url.ts). */
  redisUrl: string;
  queuePrefix: string;
  s3: {
    endpoint: string | undefined;
    region: string;
    bucket: string;
    accessKeyId: string | undefined;
    secretAccessKey: string | undefined;
    forcePathStyle: boolean;
  };
  signingSecret: string;
  /** Secrets at rest: the first key seals, every one opens. */
  encryptionKeys: EncryptionKey[];
  callbacks: { retryScheduleMs: number[]; timeoutMs: number };
  tasks: {
    deadlineMs: number;
    pollScheduleMs: number[];
    reconcileIntervalMs: number;
    maxWaiters: number;
    maxResubmits: number;
  };
  /** Provider webhooks: off when baseUrl is undefined; Replicate's also need replicateSecret, fal's falUserId. */
  providerWebhooks: {
    baseUrl: string | undefined;
    replicateSecret: string | undefined;
    falJwksUrl: string;
    falUserId: string | undefined;
    fallbackPollMs: number;
  };
  outbound: { allowCidrs: string[] };
  /** Outgoing mail: `smtpUrl` undefined where SMTP_URL is unset (only the sender needs it). */
  mail: { smtpUrl: string | undefined; from: string };
  trustProxy: TrustProxy;
  passwordHashConcurrency: number;
  concurrency: { evaluate: number; taskRunner: number; archiver: number; callbackDispatcher: number };
  otel: { endpoint: string | undefined; sampleRatio: number };
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  keyCacheTtlMs: number;
  http: HttpTimeouts;
  opsPort: number;
}

/** How long the edge waits on a client (milliseconds); each ends in 408 where an answer can still be sent. */
export interface HttpTimeouts {
  /** From the connection's first byte of a request to the end of its headers. */
  headersMs: number;
  /** The longest pause between two chunks of a request body. */
  bodyIdleMs: number;
  /** A whole JSON body. */
  jsonBodyMs: number;
  /** A whole upload (multipart): 25 MiB on a slow link needs far longer than a JSON body. */
  uploadMs: number;
  /** An idle keep-alive connection. */
  keepAliveMs: number;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Parses the environment; throws a ConfigError naming every bad variable. Empty strings count as unset. */
export function loadConfig(env: NodeJS.ProcessEnv | Record<string, string | undefined>): Config {
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = envSchema.safeParse(present);
  // Links to generated outputs and presigned URLs are made on {file_url}; in production the store's own endpoint is
  // an internal name (http://minio:9000) nobody outside can reach, so the public address must be said.
  const fileBaseUrlMissing =
    present.NODE_ENV === 'production' && !present.FILE_BASE_URL
      ? [
          'FILE_BASE_URL is required when NODE_ENV=production: the public, path-style address of the object store ' +
            '(a CDN or the store itself) that output and presigned links point at',
        ]
      : [];
  if (!parsed.success || fileBaseUrlMissing.length) {
    const problems = (parsed.success ? [] : parsed.error.issues).map((issue) => {
      const name = String(issue.path[0] ?? '?');
      const value = present[name];
      const why = value === undefined ? 'is required' : issue.message;
      return value === undefined ? `${name} ${why}` : `${name}: ${why} (got ${JSON.stringify(redact(name, value))})`;
    });
    throw new ConfigError([...new Set([...problems, ...fileBaseUrlMissing])]);
  }
  const e = parsed.data;
  const redis = parseRedisTarget(e.REDIS_URL, e.REDIS_CLUSTER);
  if ('error' in redis) throw new ConfigError([`REDIS_URL: ${redis.error} (REDIS_CLUSTER=true)`]);
  const publicBaseUrl = (e.PUBLIC_BASE_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, '');
  return {
    port: e.PORT,
    publicBaseUrl,
    // {file_url}: the public, path-style address of the object store (a CDN or the store itself).
    fileBaseUrl: (e.FILE_BASE_URL ?? e.S3_ENDPOINT ?? `https://s3.${e.S3_REGION}.amazonaws.com`).replace(/\/+$/, ''),
    databaseUrl: e.DATABASE_URL,
    databasePooler: poolerOf(e.DATABASE_URL, e.DATABASE_POOLER),
    directDatabaseUrl: e.DIRECT_DATABASE_URL ?? e.DATABASE_URL,
    redisUrl: redisTargetUrl(redis),
    queuePrefix: e.QUEUE_PREFIX,
    s3: {
      endpoint: e.S3_ENDPOINT,
      region: e.S3_REGION,
      bucket: e.S3_BUCKET,
      accessKeyId: e.S3_ACCESS_KEY_ID,
      secretAccessKey: e.S3_SECRET_ACCESS_KEY,
      forcePathStyle: e.S3_FORCE_PATH_STYLE,
    },
    signingSecret: e.SIGNING_SECRET,
    encryptionKeys: e.ENCRYPTION_KEYS,
    callbacks: { retryScheduleMs: e.CALLBACK_RETRY_SCHEDULE, timeoutMs: e.CALLBACK_TIMEOUT_MS },
    tasks: {
      deadlineMs: e.TASK_DEADLINE,
      pollScheduleMs: e.TASK_POLL_SCHEDULE,
      reconcileIntervalMs: e.RECONCILE_INTERVAL,
      maxWaiters: e.TASK_WAIT_MAX_WAITERS,
      maxResubmits: e.TASK_MAX_RESUBMITS,
    },
    providerWebhooks: {
      baseUrl: e.PROVIDER_WEBHOOK_BASE_URL?.replace(/\/+$/, ''),
      replicateSecret: e.REPLICATE_WEBHOOK_SECRET,
      falJwksUrl: e.FAL_WEBHOOK_JWKS_URL,
      falUserId: e.FAL_WEBHOOK_USER_ID,
      fallbackPollMs: e.TASK_POLL_WEBHOOK_FALLBACK,
    },
    outbound: { allowCidrs: e.OUTBOUND_ALLOW_CIDRS },
    mail: { smtpUrl: e.SMTP_URL, from: e.MAIL_FROM },
    trustProxy: e.TRUST_PROXY,
    passwordHashConcurrency: e.PASSWORD_HASH_CONCURRENCY,
    concurrency: {
      evaluate: e.EVALUATE_CONCURRENCY,
      taskRunner: e.TASK_RUNNER_CONCURRENCY,
      archiver: e.ARCHIVER_CONCURRENCY,
      callbackDispatcher: e.CALLBACK_DISPATCHER_CONCURRENCY,
    },
    otel: { endpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT, sampleRatio: e.OTEL_TRACES_SAMPLER_ARG },
    logLevel: e.LOG_LEVEL,
    keyCacheTtlMs: e.KEY_CACHE_TTL_MS,
    http: {
      headersMs: e.HTTP_HEADERS_TIMEOUT,
      bodyIdleMs: e.HTTP_BODY_IDLE_TIMEOUT,
      jsonBodyMs: e.HTTP_JSON_BODY_TIMEOUT,
      uploadMs: e.HTTP_UPLOAD_TIMEOUT,
      keepAliveMs: e.HTTP_KEEP_ALIVE_TIMEOUT,
    },
    opsPort: e.OPS_PORT,
  };
}

/** The variable names the services read: the compose file and manifests are checked against this list. */
export const CONFIG_VARIABLES = Object.keys(envSchema.shape) as (keyof typeof envSchema.shape)[];

/** Variables without a default: every deployment must set them. */
export const REQUIRED_VARIABLES = CONFIG_VARIABLES.filter(
  (name) => !envSchema.shape[name].safeParse(undefined).success,
);

function redact(name: string, value: string): string {
  if (/SECRET|PASSWORD|KEYS/.test(name)) return '***';
  return value.replace(/\/\/([^:@/]*):([^@/]+)@/, '//$1:***@');
}

/** For main.ts: the config, or the list of every problem on stderr and exit status 1. */
export function loadConfigOrExit(service: string, env: NodeJS.ProcessEnv = process.env): Config {
  try {
    return loadConfig(env);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    process.stderr.write(`${service}: ${e.message}\n`);
    process.exit(1);
  }
}
