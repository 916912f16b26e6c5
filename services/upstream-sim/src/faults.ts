// Fault injection, chosen per channel prefix and/or model (and, for the task protocols, the operation). Rules are
// tried in the order they were added and the first match applies; a rule with `times` is dropped once it has applied
// that many times. Two independent kinds of rule: request rules act on one HTTP request each; job rules (those with
// `job`) decide how a generation job created by Replicate or fal ends, and are consulted only when a job is created.

export type MalformKind = 'json' | 'shape';

/** What a `malformed: "shape"` evaluate answer gets wrong (other protocols drop their main content field). */
export type ShapeFault = 'missing-answer' | 'out-of-range' | 'bad-sum' | 'wrong-type';

/** What a task-protocol request does: Replicate create/get/cancel, fal submit/status/result/cancel, output fetches. */
export type FaultOperation = 'create' | 'status' | 'result' | 'cancel' | 'output';

/**
 * How a job ends. succeed: outputs after its duration. fail: the model errors (Replicate `failed` with `error`; fal's
 * result answers 500). nsfw: the content checker rejects it (Replicate `failed` with the E005 "flagged as sensitive"
 * error; fal's result answers 422 content_policy_violation). stuck: never leaves processing / IN_PROGRESS. lost: the
 * provider forgets the job when it would have ended (its status and result answer the protocol's 404, no webhook).
 */
export type JobOutcome = 'succeed' | 'fail' | 'stuck' | 'nsfw' | 'lost';

export interface JobFault {
  /** Default succeed. */
  outcome?: JobOutcome;
  /** Total time from creation to the outcome (default: the sim's taskDurationMs); the first fifth is queueing. */
  durationMs?: number;
  /** The error text of a `fail` outcome (Replicate `error`, fal `detail[0].msg`). */
  error?: string;
}

export interface FaultRule {
  /** Channel name from the `/ch/<name>` prefix; '' matches root requests only; unset matches every channel. */
  channel?: string;
  /** Model named by the request (for polls, cancels and outputs: the job's model); unset matches every model. */
  model?: string;
  /** Only requests doing this (task protocols only); unset matches every request. */
  operation?: FaultOperation;
  /** A job rule: jobs created while it applies end this way. Takes only channel, model, times and job. */
  job?: JobFault;
  /** Wait this long before answering (combines with every other effect). */
  latencyMs?: number;
  /** Answer this status with `body`, or with the protocol's own error body for the status. */
  status?: number;
  body?: unknown;
  /** Extra response headers, e.g. retry-after with a 429. */
  headers?: Record<string, string>;
  /** Never answer: the socket stays open until the client gives up or the sim closes. */
  hang?: true;
  /** Destroy the socket with a TCP reset instead of answering. */
  reset?: true;
  /** Send the status line, headers and this many chunks (SSE events, stream array items; for a plain JSON body,
   *  half of it), then destroy the socket without a clean end. */
  cutAfterChunks?: number;
  /** "json": the body (for streams, the first event's data) is cut in half, so it does not parse. "shape": valid
   *  JSON missing its main field (choices, content, candidates, output, data) or, for evaluate, see `shape`. */
  malformed?: MalformKind;
  /** Which shape error an evaluate answer gets (default missing-answer). */
  shape?: ShapeFault;
  /** Delay between stream chunks. */
  chunkDelayMs?: number;
  /** Apply this many times (requests, or for a job rule, jobs), then drop the rule. */
  times?: number;
}

export interface StoredFault extends FaultRule {
  id: string;
}

export interface FaultControl {
  /** Adds a rule after the existing ones and returns its id. Throws a RangeError naming every invalid field. */
  add(rule: FaultRule): string;
  remove(id: string): boolean;
  clear(): void;
  list(): StoredFault[];
}

const SHAPES: readonly ShapeFault[] = ['missing-answer', 'out-of-range', 'bad-sum', 'wrong-type'];
const OPERATIONS: readonly FaultOperation[] = ['create', 'status', 'result', 'cancel', 'output'];
const OUTCOMES: readonly JobOutcome[] = ['succeed', 'fail', 'stuck', 'nsfw', 'lost'];
const KNOWN = new Set([
  'channel',
  'model',
  'operation',
  'job',
  'latencyMs',
  'status',
  'body',
  'headers',
  'hang',
  'reset',
  'cutAfterChunks',
  'malformed',
  'shape',
  'chunkDelayMs',
  'times',
]);
const JOB_RULE_FIELDS = new Set(['channel', 'model', 'job', 'times']);
const JOB_FIELDS = new Set(['outcome', 'durationMs', 'error']);

const isCount = (v: unknown, min: number, max: number) =>
  typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;

/** Every problem with a rule sent by a client; empty when it is valid. */
export function faultRuleProblems(input: unknown): string[] {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return ['the rule must be a JSON object'];
  const rule = input as Record<string, unknown>;
  const problems: string[] = [];
  for (const key of Object.keys(rule)) if (!KNOWN.has(key)) problems.push(`unknown field "${key}"`);
  if (rule.channel !== undefined && typeof rule.channel !== 'string') problems.push('channel must be a string');
  if (rule.model !== undefined && typeof rule.model !== 'string') problems.push('model must be a string');
  if (rule.latencyMs !== undefined && !isCount(rule.latencyMs, 0, 600_000))
    problems.push('latencyMs must be an integer 0..600000');
  if (rule.chunkDelayMs !== undefined && !isCount(rule.chunkDelayMs, 0, 60_000))
    problems.push('chunkDelayMs must be an integer 0..60000');
  if (rule.status !== undefined && !isCount(rule.status, 100, 599)) problems.push('status must be an integer 100..599');
  if (rule.headers !== undefined) {
    const h = rule.headers;
    if (
      h === null ||
      typeof h !== 'object' ||
      Array.isArray(h) ||
      Object.values(h).some((v) => typeof v !== 'string')
    ) {
      problems.push('headers must be an object of strings');
    }
  }
  if (rule.hang !== undefined && rule.hang !== true) problems.push('hang must be true');
  if (rule.reset !== undefined && rule.reset !== true) problems.push('reset must be true');
  if (rule.cutAfterChunks !== undefined && !isCount(rule.cutAfterChunks, 0, 1_000_000))
    problems.push('cutAfterChunks must be an integer >= 0');
  if (rule.malformed !== undefined && rule.malformed !== 'json' && rule.malformed !== 'shape')
    problems.push('malformed must be "json" or "shape"');
  if (rule.shape !== undefined && !SHAPES.includes(rule.shape as ShapeFault))
    problems.push(`shape must be one of ${SHAPES.join(', ')}`);
  if (rule.times !== undefined && !isCount(rule.times, 1, 1_000_000_000))
    problems.push('times must be an integer >= 1');
  if (rule.operation !== undefined && !OPERATIONS.includes(rule.operation as FaultOperation))
    problems.push(`operation must be one of ${OPERATIONS.join(', ')}`);
  if (rule.job !== undefined) problems.push(...jobProblems(rule));
  const effects = ['hang', 'reset', 'status'].filter((k) => rule[k] !== undefined);
  if (effects.length > 1) problems.push(`${effects.join(', ')} cannot be combined`);
  return problems;
}

function jobProblems(rule: Record<string, unknown>): string[] {
  const job = rule.job;
  if (job === null || typeof job !== 'object' || Array.isArray(job)) return ['job must be an object'];
  const problems: string[] = [];
  const others = Object.keys(rule).filter((k) => !JOB_RULE_FIELDS.has(k));
  if (others.length) problems.push(`a job rule takes only channel, model, times and job, not ${others.join(', ')}`);
  const fields = job as Record<string, unknown>;
  for (const key of Object.keys(fields)) if (!JOB_FIELDS.has(key)) problems.push(`unknown field "job.${key}"`);
  if (fields.outcome === undefined && fields.durationMs === undefined)
    problems.push('job needs an outcome or a durationMs');
  if (fields.outcome !== undefined && !OUTCOMES.includes(fields.outcome as JobOutcome))
    problems.push(`job.outcome must be one of ${OUTCOMES.join(', ')}`);
  if (fields.durationMs !== undefined && !isCount(fields.durationMs, 0, 3_600_000))
    problems.push('job.durationMs must be an integer 0..3600000');
  if (
    fields.error !== undefined &&
    (typeof fields.error !== 'string' || fields.error.length === 0 || fields.error.length > 2000)
  ) {
    problems.push('job.error must be a string of 1..2000 characters');
  } else if (fields.error !== undefined && fields.outcome !== 'fail')
    problems.push('job.error goes with outcome "fail"');
  return problems;
}

const ruleMatches = (r: StoredFault, channel: string, model: string | undefined) =>
  (r.channel === undefined || r.channel === channel) && (r.model === undefined || r.model === model);

export class FaultStore implements FaultControl {
  private rules: StoredFault[] = [];
  private remaining = new Map<string, number>();
  private next = 1;

  add(rule: FaultRule): string {
    const problems = faultRuleProblems(rule);
    if (problems.length) throw new RangeError(problems.join('; '));
    const id = `flt_${this.next++}`;
    this.rules.push({ ...rule, id });
    if (rule.times !== undefined) this.remaining.set(id, rule.times);
    return id;
  }

  remove(id: string): boolean {
    const before = this.rules.length;
    this.rules = this.rules.filter((r) => r.id !== id);
    this.remaining.delete(id);
    return this.rules.length !== before;
  }

  clear(): void {
    this.rules = [];
    this.remaining.clear();
  }

  list(): StoredFault[] {
    return this.rules.map((r) => ({ ...r }));
  }

  /** The first request rule matching the request, counted as applied (a `times` rule may drop out here). */
  take(channel: string, model: string | undefined, operation?: FaultOperation): StoredFault | undefined {
    if (this.rules.length === 0) return undefined;
    const rule = this.rules.find(
      (r) => !r.job && ruleMatches(r, channel, model) && (r.operation === undefined || r.operation === operation),
    );
    return rule && this.count(rule);
  }

  /** The first job rule matching a job being created, counted as applied. */
  takeJob(channel: string, model: string): StoredFault | undefined {
    if (this.rules.length === 0) return undefined;
    const rule = this.rules.find((r) => r.job && ruleMatches(r, channel, model));
    return rule && this.count(rule);
  }

  private count(rule: StoredFault): StoredFault {
    const left = this.remaining.get(rule.id);
    if (left !== undefined) {
      if (left <= 1) this.remove(rule.id);
      else this.remaining.set(rule.id, left - 1);
    }
    return rule;
  }
}
