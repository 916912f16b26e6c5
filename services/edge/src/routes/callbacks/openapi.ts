import { z } from 'zod';
import { KEY_AUTH, operation, timestamp } from '../../openapi/operation';
import { RECOVER_BODY, RECOVER_LIMIT, TEST_CALLBACK_BODY } from './schema';
import { TEST_CALLBACKS_PER_MINUTE } from './test-callback';

const BODY_ERRORS = ['invalid_json', 'json_too_deep', 'payload_too_large', 'invalid_request'] as const;

export const callbackApi = [
  operation({
    method: 'post',
    route: '/api/v1/callbacks/recover',
    operationId: 'recoverCallbacks',
    summary: 'Start a new delivery round for every delivery parked since a time',
    description:
      `Up to ${RECOVER_LIMIT} of the workspace's parked deliveries, parked at or after \`since\` (oldest first), ` +
      'each get a new round of attempts whose first runs now; has_more says more remain (call again). A delivery ' +
      'already pending is not restarted, so calling twice starts no second round.',
    tag: 'Callbacks',
    auth: 'bearer',
    scope: 'tasks.write',
    body: { json: RECOVER_BODY },
    responses: {
      200: {
        description: 'The rounds started.',
        schema: z.object({
          object: z.literal('callback_recovery'),
          since: timestamp,
          recovered: z.number().int().describe('Deliveries given a new round by this call.'),
          has_more: z.boolean(),
        }),
      },
    },
    errors: [...KEY_AUTH, ...BODY_ERRORS, 'insufficient_role'],
  }),
  operation({
    method: 'post',
    route: '/api/v1/callbacks/test',
    operationId: 'testCallback',
    summary: 'POST a signed sample completion to a URL and report how the receiver answered',
    description:
      'Signed and sent as a real delivery (the same headers, the workspace secret), with a sample task id ' +
      '(tsk_sample…), under the callback_url rules. A receiver that fails is an answer (delivered false, error), ' +
      `not an error. At most ${TEST_CALLBACKS_PER_MINUTE} a minute per workspace.`,
    tag: 'Callbacks',
    auth: 'bearer',
    scope: 'tasks.write',
    body: { json: TEST_CALLBACK_BODY },
    responses: {
      200: {
        description: "The receiver's answer.",
        schema: z.object({
          object: z.literal('callback_test'),
          url: z.string(),
          task_id: z.string(),
          delivery_id: z.string(),
          webhook_id: z.string(),
          status_code: z.number().int().nullable(),
          delivered: z.boolean().describe('A 2xx answer.'),
          latency_ms: z.number().int(),
          response_head: z.string().nullable().describe("The answer's first 1,024 bytes."),
          error: z.string().nullable(),
        }),
      },
    },
    errors: [...KEY_AUTH, ...BODY_ERRORS, 'invalid_callback_url', 'rate_limit_exceeded', 'insufficient_role'],
  }),
];
