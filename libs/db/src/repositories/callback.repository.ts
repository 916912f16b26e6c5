// Callback deliveries (spec §6, DESIGN.md §4): the workspace's signing secret and the log of every attempt. The
// task's delivery state (none → pending → delivered | parked) is a Task column: taskRepository writes it.
// The secrets are stored sealed (secret-box.ts) for their workspace's row: both columns hold values sealed for
// `callback-secret:<workspace id>`, so a rotation moves the current one into the previous one as it is.
//
// Attempts are numbered from 1 per task and keep increasing across redeliveries; a round of five starts at
// Task.callbackRoundStart. An attempt's row is written once, when its outcome is known ((taskId, attempt) unique):
// a dispatcher that dies mid-attempt leaves no row, so the attempt is made again under the same number and the
// same delivery id.
import { epochMs, queryPrepared, withTx, type DbClient } from '../client';
import type { Task } from '../generated/prisma/client';
import { isSealed, secretAad, type SecretBox } from '../secret-box';
import type { ResealCounts } from './channel.repository';
import { isArchivedOutputOf } from './file.repository';

/** After a rotation the previous secret still signs for this long (DESIGN.md §4). */
export const CALLBACK_SECRET_OVERLAP_MS = 24 * 3600 * 1000;

export interface CallbackSecretView {
  secret: string;
  /** Still used to sign until previousExpiresAt. */
  previousSecret: string | null;
  previousExpiresAt: Date | null;
  rotatedAt: Date | null;
  createdAt: Date;
}

export interface RecordAttemptInput {
  workspaceId: string;
  taskId: string;
  attempt: number;
  deliveryId: string;
  url: string;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  /** The start of the response body. */
  responseHead: string | null;
  at: Date;
}

const view = (row: CallbackSecretView, now: Date): CallbackSecretView =>
  row.previousExpiresAt && row.previousExpiresAt > now
    ? row
    : { ...row, previousSecret: null, previousExpiresAt: null };

const signingOf = (s: CallbackSecretView) => (s.previousSecret ? [s.secret, s.previousSecret] : [s.secret]);

const aadOf = (workspaceId: string) => secretAad('callback-secret', workspaceId);
const RESEAL_BATCH = 100;

/** A view with its secrets opened; the previous one only while it still signs. */
function opened(box: SecretBox, workspaceId: string, row: CallbackSecretView, now: Date): CallbackSecretView {
  const v = view(row, now);
  const aad = aadOf(workspaceId);
  return { ...v, secret: box.open(v.secret, aad), previousSecret: v.previousSecret && box.open(v.previousSecret, aad) };
}

/** A recorded attempt, as much of it as deciding what follows needs. */
export interface LastAttempt {
  attempt: number;
  statusCode: number | null;
  createdAt: Date;
  durationMs: number | null;
}

/** The task's columns a delivery attempt reads: what it decides on and what its body (the task envelope) shows. */
export type AttemptTask = Pick<
  Task,
  | 'id'
  | 'workspaceId'
  | 'status'
  | 'model'
  | 'operation'
  | 'output'
  | 'reserved'
  | 'cost'
  | 'errorCode'
  | 'errorMessage'
  | 'channelId'
  | 'upstreamId'
  | 'providerJobs'
  | 'callbackUrl'
  | 'callbackState'
  | 'callbackRoundStart'
  | 'createdAt'
  | 'startedAt'
  | 'completedAt'
>;

/** What one delivery attempt reads before it sends (callbackRepository.attemptContext). */
export interface AttemptContext {
  task: AttemptTask;
  /** The task's last recorded attempt, or null. */
  last: LastAttempt | null;
  /** The workspace's currency; null when the workspace is gone (its tasks go with it). */
  currency: string | null;
  /** The secrets to sign with now; null before the workspace's first delivery (callbackRepository.signingSecrets). */
  signing: string[] | null;
  /** When `signing` stops being right without a rotation (the previous secret's overlap ends), or null. */
  signingUntil: Date | null;
  /** Which secrets those are (when they were made or last rotated, epoch ms), or null before the first delivery. */
  secretsVersion: number | null;
  /** The visible library file of the task's archived first output (isArchivedOutputOf), or null. */
  archivedFile: { id: string; workspaceId: string } | null;
}

/**
 * attemptContexts' statement (one task, or several), prepared on the pool (no query compiler, one parse per
 * connection): each task, its workspace `w`, the workspace's CallbackSecret `s`, output 0's library file `f` and the
 * last attempt `a`. Times are read as epoch milliseconds (DateTime is stored as UTC wall time in `timestamp` columns),
 * which pg and Prisma's raw path both answer as a number whatever the connection's or the process's time zone; money
 * as text. The secrets'
 * version is when they were made or last rotated. The last attempt and the file are LATERAL subqueries with a LIMIT:
 * one index probe each, whatever the tables hold.
 */
const ATTEMPT_CONTEXT_OF = (tasks: string) => `
  SELECT t.id, t."workspaceId", t.status, t.model, t.operation, t.output,
    t.reserved::text AS reserved, t.cost::text AS cost, t."errorCode", t."errorMessage", t."channelId",
    t."upstreamId", t."providerJobs",
    t."callbackUrl", t."callbackState", t."callbackRoundStart", ${epochMs('t."createdAt"')} AS "createdAt",
    ${epochMs('t."startedAt"')} AS "startedAt", ${epochMs('t."completedAt"')} AS "completedAt",
    w.currency, ${epochMs('coalesce(s."rotatedAt", s."createdAt")')} AS "secretsVersion",
    f.id AS "fileId", f."workspaceId" AS "fileWorkspaceId", ${epochMs('f."expiresAt"')} AS "fileExpiresAt",
    s.secret, s."previousSecret", ${epochMs('s."previousExpiresAt"')} AS "previousExpiresAt",
    a.attempt AS "lastAttempt", a."statusCode" AS "lastStatus", ${epochMs('a."createdAt"')} AS "lastAt",
    a."durationMs" AS "lastDuration"
  FROM "Task" t
  LEFT JOIN "Workspace" w ON w.id = t."workspaceId"
  LEFT JOIN "CallbackSecret" s ON s."workspaceId" = t."workspaceId"
  LEFT JOIN LATERAL (
    SELECT id, "workspaceId", "expiresAt" FROM "File" WHERE "taskId" = t.id AND "outputIndex" = 0 LIMIT 1
  ) f ON true
  LEFT JOIN LATERAL (
    SELECT attempt, "statusCode", "createdAt", "durationMs" FROM "CallbackAttempt"
    WHERE "taskId" = t.id ORDER BY attempt DESC LIMIT 1
  ) a ON true
  WHERE ${tasks}`;
/** For one task, a plan each connection keeps; for several, planned for the ids given. */
export const ATTEMPT_CONTEXT = ATTEMPT_CONTEXT_OF('t.id = $1');
const ATTEMPT_CONTEXTS = ATTEMPT_CONTEXT_OF('t.id = ANY($1::text[])');

type Ms = number | null;
/** A row of ATTEMPT_CONTEXT. */
interface AttemptContextRow {
  id: string;
  workspaceId: string;
  status: Task['status'];
  model: string;
  operation: string;
  output: unknown;
  reserved: string;
  cost: string | null;
  errorCode: string | null;
  errorMessage: string | null;
  channelId: string | null;
  upstreamId: string | null;
  providerJobs: Task['providerJobs'];
  callbackUrl: string | null;
  callbackState: Task['callbackState'];
  callbackRoundStart: number;
  createdAt: number;
  startedAt: Ms;
  completedAt: Ms;
  currency: string | null;
  secretsVersion: Ms;
  fileId: string | null;
  fileWorkspaceId: string | null;
  fileExpiresAt: Ms;
  secret: string | null;
  previousSecret: string | null;
  previousExpiresAt: Ms;
  lastAttempt: number | null;
  lastStatus: number | null;
  lastAt: Ms;
  lastDuration: number | null;
}

/**
 * An attempt's context from its row, the secrets to sign with and the last attempt. The file is kept only when it is
 * the very file the output entry names, of the task's workspace and still visible at `now` (isArchivedOutputOf).
 */
function contextOf(
  row: AttemptContextRow,
  secrets: { signing: string[]; until: Date | null } | null,
  last: LastAttempt | null,
  now: Date,
): AttemptContext {
  const task: AttemptTask = {
    id: row.id,
    workspaceId: row.workspaceId,
    status: row.status,
    model: row.model,
    operation: row.operation,
    output: row.output as AttemptTask['output'],
    reserved: BigInt(row.reserved),
    cost: row.cost === null ? null : BigInt(row.cost),
    errorCode: row.errorCode,
    errorMessage: row.errorMessage,
    channelId: row.channelId,
    upstreamId: row.upstreamId,
    providerJobs: row.providerJobs,
    callbackUrl: row.callbackUrl,
    callbackState: row.callbackState,
    callbackRoundStart: row.callbackRoundStart,
    createdAt: new Date(row.createdAt),
    startedAt: dateOf(row.startedAt),
    completedAt: dateOf(row.completedAt),
  };
  const archived =
    row.fileId !== null &&
    isArchivedOutputOf(
      task,
      { id: row.fileId, workspaceId: row.fileWorkspaceId!, expiresAt: dateOf(row.fileExpiresAt) },
      now,
    );
  return {
    task,
    last,
    currency: row.currency,
    signing: secrets ? secrets.signing : null,
    signingUntil: secrets ? secrets.until : null,
    secretsVersion: row.secretsVersion,
    archivedFile: archived ? { id: row.fileId!, workspaceId: task.workspaceId } : null,
  };
}

const dateOf = (ms: Ms) => (ms === null ? null : new Date(ms));

// The statements of the delivery path besides attemptContext (the dispatcher's first delivery to a workspace, its
// reconciler, its parked gauge), prepared on the pool like it: the dispatcher never loads Prisma's query compiler.
const SECRET_COLUMNS = `secret, "previousSecret", ${epochMs('"previousExpiresAt"')} AS "previousExpiresAt",
  ${epochMs('"rotatedAt"')} AS "rotatedAt", ${epochMs('"createdAt"')} AS "createdAt"`;
const SECRET = `SELECT ${SECRET_COLUMNS} FROM "CallbackSecret" WHERE "workspaceId" = $1`;
const MAKE_SECRET = `
  INSERT INTO "CallbackSecret" ("workspaceId", secret, "createdAt") VALUES ($1, $2, $3::timestamp(3))
  ON CONFLICT ("workspaceId") DO UPDATE SET "workspaceId" = EXCLUDED."workspaceId"
  RETURNING ${SECRET_COLUMNS}`;
const LAST_ATTEMPT = `
  SELECT attempt, "statusCode", ${epochMs('"createdAt"')} AS "createdAt", "durationMs" FROM "CallbackAttempt"
  WHERE "taskId" = $1 ORDER BY attempt DESC LIMIT 1`;

interface SecretRow {
  secret: string;
  previousSecret: string | null;
  previousExpiresAt: Ms;
  rotatedAt: Ms;
  createdAt: number;
}

const secretView = (row: SecretRow): CallbackSecretView => ({
  secret: row.secret,
  previousSecret: row.previousSecret,
  previousExpiresAt: dateOf(row.previousExpiresAt),
  rotatedAt: dateOf(row.rotatedAt),
  createdAt: new Date(row.createdAt),
});

/** An attempt's context from its row as of `now`, its secrets opened (once per attempt: they are not kept). */
function attemptContextOf(box: SecretBox, row: AttemptContextRow, now: Date): AttemptContext {
  let secrets = null;
  if (row.secret !== null) {
    const { secret, previousSecret } = row;
    const current = opened(
      box,
      row.workspaceId,
      { secret, previousSecret, previousExpiresAt: dateOf(row.previousExpiresAt), rotatedAt: null, createdAt: now },
      now,
    );
    secrets = { signing: signingOf(current), until: current.previousExpiresAt };
  }
  const last =
    row.lastAttempt === null
      ? null
      : {
          attempt: row.lastAttempt,
          statusCode: row.lastStatus,
          createdAt: new Date(row.lastAt!),
          durationMs: row.lastDuration,
        };
  return contextOf(row, secrets, last, now);
}

export const callbackRepository = {
  /** Tasks whose delivery is parked (five failed attempts in a round): a gauge for operators. */
  async countParked(db: DbClient): Promise<number> {
    const [row] = await queryPrepared<{ n: number }>(
      db,
      'gensvc_count_parked',
      `SELECT count(*)::int AS n FROM "Task" WHERE "callbackState" = 'parked'`,
      [],
    );
    return row!.n;
  },

  /**
   * The workspace's secret, made on first use with `make` (racing first uses agree on one). On the pool, as the
   * delivery path's other statements: the dispatcher's first delivery to a workspace reads it here, and through
   * Prisma that read would load Prisma's query compiler into the dispatcher and delay its first callbacks.
   */
  async secret(
    db: DbClient,
    box: SecretBox,
    workspaceId: string,
    make: () => string,
    now = new Date(),
  ): Promise<CallbackSecretView> {
    const [existing] = await queryPrepared<SecretRow>(db, 'gensvc_callback_secret', SECRET, [workspaceId]);
    if (existing) return opened(box, workspaceId, secretView(existing), now);
    // First use. When a racing first use inserted meanwhile, the no-op update returns its row, not ours.
    const rows = await queryPrepared<SecretRow>(db, 'gensvc_callback_secret_make', MAKE_SECRET, [
      workspaceId,
      box.seal(make(), aadOf(workspaceId)),
      now.toISOString(),
    ]);
    return opened(box, workspaceId, secretView(rows[0]!), now);
  },

  /** Replaces the secret; the old one keeps signing for 24 h. One statement, so racing rotations chain cleanly. */
  async rotate(
    db: DbClient,
    box: SecretBox,
    workspaceId: string,
    make: () => string,
    now = new Date(),
  ): Promise<CallbackSecretView> {
    const overlapEnd = new Date(now.getTime() + CALLBACK_SECRET_OVERLAP_MS);
    const sealed = box.seal(make(), aadOf(workspaceId));
    const rows = await db.$queryRaw<CallbackSecretView[]>`
      INSERT INTO "CallbackSecret" ("workspaceId", secret, "createdAt", "rotatedAt")
      VALUES (${workspaceId}, ${sealed}, ${now}::timestamp(3), ${now}::timestamp(3))
      ON CONFLICT ("workspaceId") DO UPDATE SET
        "previousSecret" = "CallbackSecret".secret, "previousExpiresAt" = ${overlapEnd}::timestamp(3),
        secret = EXCLUDED.secret, "rotatedAt" = EXCLUDED."rotatedAt"
      RETURNING secret, "previousSecret", "previousExpiresAt", "rotatedAt", "createdAt"`;
    return opened(box, workspaceId, rows[0]!, now);
  },

  /**
   * Ends the overlap of the last rotation at once: from here deliveries are signed with the current secret only.
   * Made on first use like `secret`; retiring when nothing is left to retire changes nothing.
   */
  async retirePrevious(
    db: DbClient,
    box: SecretBox,
    workspaceId: string,
    make: () => string,
    now = new Date(),
  ): Promise<CallbackSecretView> {
    const rows = await db.$queryRaw<CallbackSecretView[]>`
      UPDATE "CallbackSecret" SET "previousSecret" = NULL, "previousExpiresAt" = NULL
      WHERE "workspaceId" = ${workspaceId}
      RETURNING secret, "previousSecret", "previousExpiresAt", "rotatedAt", "createdAt"`;
    return rows[0]
      ? opened(box, workspaceId, rows[0], now)
      : callbackRepository.secret(db, box, workspaceId, make, now);
  },

  /**
   * Seals every workspace's secrets under the current key (channelRepository.resealAll): plaintext ones and those of
   * older keys, in batches of rows locked and rewritten in a transaction each; running it again changes nothing. A
   * previous secret past its overlap signs nothing any more: it is dropped, not re-sealed, so that the key it was
   * sealed under can go.
   */
  async resealAll(db: DbClient, box: SecretBox, now = new Date()): Promise<ResealCounts> {
    const counts: ResealCounts = { rows: 0, sealed: 0, rekeyed: 0 };
    const reseal = (value: string, aad: string) => {
      if (box.isCurrent(value)) return value;
      if (isSealed(value)) counts.rekeyed++;
      else counts.sealed++;
      return box.seal(box.open(value, aad), aad);
    };
    for (let after = ''; ; ) {
      const last = await withTx(db, async (tx) => {
        const rows = await tx.$queryRaw<
          { workspaceId: string; secret: string; previousSecret: string | null; previousExpiresAt: Date | null }[]
        >`
          SELECT "workspaceId", secret, "previousSecret", "previousExpiresAt" FROM "CallbackSecret"
          WHERE "workspaceId" > ${after} ORDER BY "workspaceId" LIMIT ${RESEAL_BATCH} FOR UPDATE`;
        for (const row of rows) {
          counts.rows++;
          const aad = aadOf(row.workspaceId);
          const secret = reseal(row.secret, aad);
          const live = row.previousExpiresAt !== null && row.previousExpiresAt > now;
          const previousSecret = live && row.previousSecret ? reseal(row.previousSecret, aad) : null;
          if (secret === row.secret && previousSecret === row.previousSecret) continue;
          await tx.$executeRaw`
            UPDATE "CallbackSecret" SET secret = ${secret}, "previousSecret" = ${previousSecret},
              "previousExpiresAt" = ${previousSecret === null ? null : row.previousExpiresAt}::timestamp(3)
            WHERE "workspaceId" = ${row.workspaceId}`;
        }
        return rows.length === RESEAL_BATCH ? rows.at(-1)!.workspaceId : null;
      });
      if (last === null) return counts;
      after = last;
    }
  },

  /** The secrets a delivery is signed with now: the current one, and the previous one during the overlap. */
  async signingSecrets(
    db: DbClient,
    box: SecretBox,
    workspaceId: string,
    make: () => string,
    now = new Date(),
  ): Promise<string[]> {
    return signingOf(await callbackRepository.secret(db, box, workspaceId, make, now));
  },

  /**
   * Everything each delivery attempt reads, in one statement for them all: the task, its last recorded attempt, the
   * workspace's currency and signing secrets, and the library file of its first output. The file is read by (task,
   * output 0) and kept only when it is the very file the output entry names, of the task's workspace and still visible
   * at the attempt's `now` (isArchivedOutputOf). Null for a task that does not exist; in the order asked.
   */
  async attemptContexts(
    db: DbClient,
    box: SecretBox,
    reads: readonly { taskId: string; now: Date }[],
  ): Promise<(AttemptContext | null)[]> {
    const ids = [...new Set(reads.map((r) => r.taskId))];
    const rows =
      ids.length === 1
        ? await queryPrepared<AttemptContextRow>(db, 'gensvc_attempt_context', ATTEMPT_CONTEXT, ids)
        : await queryPrepared<AttemptContextRow>(db, 'gensvc_attempt_contexts', ATTEMPT_CONTEXTS, [ids]);
    const byId = new Map(rows.map((row) => [row.id, row]));
    return reads.map(({ taskId, now }) => {
      const row = byId.get(taskId);
      return row ? attemptContextOf(box, row, now) : null;
    });
  },

  attempts(db: DbClient, taskId: string) {
    return db.callbackAttempt.findMany({ where: { taskId }, orderBy: { attempt: 'asc' } });
  },

  /** The last recorded attempt of the task, or null. */
  async lastAttempt(db: DbClient, taskId: string): Promise<LastAttempt | null> {
    const [row] = await queryPrepared<{
      attempt: number;
      statusCode: number | null;
      createdAt: number;
      durationMs: number | null;
    }>(db, 'gensvc_last_attempt', LAST_ATTEMPT, [taskId]);
    return row
      ? {
          attempt: row.attempt,
          statusCode: row.statusCode,
          createdAt: new Date(row.createdAt),
          durationMs: row.durationMs,
        }
      : null;
  },
};
