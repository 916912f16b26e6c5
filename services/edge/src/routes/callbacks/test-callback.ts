// POST /api/v1/callbacks/test — a signed sample completion POSTed to a URL, so a receiver can be checked before any
// task depends on it. The headers are a real attempt's (the same function signs both, with the workspace's signing
// secrets), the task id is plainly a sample, and the request goes through the outbound client under the callbacks'
// rules (https, public addresses, TLS verified, the socket pinned to the checked address, no redirects).
import { randomBytes } from 'node:crypto';
import { taskEnvelope } from '@gensvc/contracts';
import { callbackRepository } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import { isOutboundError, postChecked, readHead, type OutboundReason } from '@gensvc/outbound';
import { callbackSignatureHeaders, deliveryIdFor, newCallbackSecret, webhookIdFor } from '@gensvc/webhooks';
import type { Request, Response } from 'express';
import { authOf } from '../../auth/authenticate';
import type { EdgeDeps } from '../../deps';
import { parseBody } from '../../http/parse-body';
import { takeWorkspaceSlot } from '../../limits/rate-limit';
import { TEST_CALLBACK_BODY } from './schema';

type Deps = Pick<EdgeDeps, 'db' | 'secrets' | 'config' | 'outbound' | 'rateSlots'>;

/** Test callbacks per workspace per minute, API and dashboard together: a check, never a way to flood a host. */
export const TEST_CALLBACKS_PER_MINUTE = 10;
/** Kept of the receiver's answer and shown, as the delivery log keeps. */
const RESPONSE_HEAD_BYTES = 1024;
/** The receiver's time to answer: a real delivery's (CALLBACK_TIMEOUT_MS), capped so a test never holds long. */
const MAX_TEST_TIMEOUT_MS = 10_000;
const USER_AGENT = 'gensvc-callbacks/1';
/** Refusals of the URL itself: the caller's input breaks a rule, answered as task creation answers it. */
const ADDRESS_RULES: ReadonlySet<OutboundReason> = new Set(['scheme', 'userinfo', 'port', 'private_address']);

export interface TestCallbackResult {
  object: 'callback_test';
  url: string;
  task_id: string;
  delivery_id: string;
  webhook_id: string;
  /** The receiver's status; null when no answer came. */
  status_code: number | null;
  /** A 2xx: a real delivery would count as delivered. */
  delivered: boolean;
  /** From sending until the status line arrived, or the request failed. */
  latency_ms: number;
  /** The answer's first bytes as text, at most RESPONSE_HEAD_BYTES. */
  response_head: string | null;
  error: string | null;
}

export function testCallback(deps: Deps) {
  return async (req: Request, res: Response) => {
    const { url } = parseBody(TEST_CALLBACK_BODY, req.body);
    const { workspace } = authOf(res);
    res.json(await sendTestCallback(deps, res, workspace, url));
  };
}

/** A sample id of the task id's shape, `tsk_sample…`, new on each test so a receiver's de-duplication lets it in. */
const sampleTaskId = () =>
  `tsk_sample${Array.from(randomBytes(16), (b) => 'abcdefghijklmnopqrstuvwxyz0123456789'[b % 36]).join('')}`;

/** Counts the test against the workspace's window, then sends it; also the dashboard's (the session's workspace). */
export async function sendTestCallback(
  deps: Deps,
  res: Response,
  workspace: { id: string; currency: string },
  url: string,
): Promise<TestCallbackResult> {
  await takeWorkspaceSlot(deps, res, {
    bucket: 'callback-tests',
    workspaceId: workspace.id,
    limit: TEST_CALLBACKS_PER_MINUTE,
    what: 'test callbacks',
  });
  const taskId = sampleTaskId();
  const now = new Date();
  const body = Buffer.from(JSON.stringify(sampleEnvelope(taskId, url, workspace.currency, now)), 'utf8');
  const secrets = await callbackRepository.signingSecrets(deps.db, deps.secrets, workspace.id, newCallbackSecret, now);
  const ids = { taskId, deliveryId: deliveryIdFor(taskId, 1), webhookId: webhookIdFor(taskId, 'completed') };
  const headers = {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    ...callbackSignatureHeaders(body, secrets, ids),
  };
  const result = {
    object: 'callback_test' as const,
    url,
    task_id: taskId,
    delivery_id: ids.deliveryId,
    webhook_id: ids.webhookId,
  };
  const timeoutMs = Math.min(deps.config.callbacks.timeoutMs, MAX_TEST_TIMEOUT_MS);
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  try {
    const response = await postChecked(url, body, {
      allowCidrs: deps.config.outbound.allowCidrs,
      ...deps.outbound,
      headers,
      timeoutMs,
      connectTimeoutMs: Math.min(5_000, timeoutMs),
      acceptStatus: () => true,
      maxBytes: Number.POSITIVE_INFINITY,
    });
    const latency = elapsed();
    const head = (await readHead(response.body, RESPONSE_HEAD_BYTES)).toString('utf8').replace(/\u0000/g, '');
    const delivered = response.status >= 200 && response.status < 300;
    return {
      ...result,
      status_code: response.status,
      delivered,
      latency_ms: latency,
      response_head: head === '' ? null : head,
      error: delivered ? null : `http_status: the receiver answered ${response.status}.`,
    };
  } catch (e) {
    if (!isOutboundError(e)) throw e;
    if (ADDRESS_RULES.has(e.reason)) throw errors.invalidCallbackUrl(`url was refused (${e.reason}): ${e.rule}`);
    // As the delivery log says it: an unreachable port reads the same whatever the cause, so no port is mapped.
    const unreachable = e.reason === 'tls' || e.reason === 'timeout' || e.reason === 'connection';
    return {
      ...result,
      status_code: e.status ?? null,
      delivered: false,
      latency_ms: elapsed(),
      response_head: null,
      error: unreachable ? `unreachable: ${e.rule}` : `${e.reason}: ${e.rule}`,
    };
  }
}

/** A finished image task as a callback carries it, pointing at nothing real. */
function sampleEnvelope(taskId: string, url: string, currency: string, now: Date) {
  const output = {
    outputs: [
      {
        kind: 'image',
        url: 'https://example.com/gensvc-sample.png',
        width: 1024,
        height: 1024,
        content_type: 'image/png',
        archive_status: 'pending',
      },
    ],
  };
  const task = {
    id: taskId,
    status: 'completed',
    model: 'sample/image-model',
    operation: 'text-to-image',
    output,
    cost: 0n,
    reserved: 0n,
    errorCode: null,
    errorMessage: null,
    channelId: null,
    upstreamId: null,
    providerJobs: [],
    callbackUrl: url,
    callbackState: 'pending',
    createdAt: new Date(now.getTime() - 2_000),
    startedAt: new Date(now.getTime() - 1_500),
    completedAt: now,
  };
  return taskEnvelope(task, { currency, deliveredAt: now });
}
