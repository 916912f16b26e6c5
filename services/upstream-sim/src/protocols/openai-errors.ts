// OpenAI's error body, shared by chat completions, images and responses:
// {"error":{"message","type","param","code"}}.
import { randomUUID } from 'node:crypto';
import { json, type Reply } from '../reply';

const DEFAULTS: Record<number, { type: string; code: string | null; message: string }> = {
  400: { type: 'invalid_request_error', code: null, message: 'Invalid request.' },
  401: { type: 'invalid_request_error', code: 'invalid_api_key', message: 'Incorrect API key provided.' },
  403: {
    type: 'invalid_request_error',
    code: 'unsupported_country_region_territory',
    message: 'Country, region, or territory not supported',
  },
  404: {
    type: 'invalid_request_error',
    code: 'model_not_found',
    message: 'The model does not exist or you do not have access to it.',
  },
  429: {
    type: 'requests',
    code: 'rate_limit_exceeded',
    message: 'Rate limit reached for requests. Please try again later.',
  },
  500: {
    type: 'server_error',
    code: null,
    message: 'The server had an error while processing your request. Sorry about that!',
  },
  503: { type: 'server_error', code: null, message: 'The engine is currently overloaded, please try again later.' },
};

export function openAiError(
  status: number,
  message?: string,
  param: string | null = null,
  code?: string | null,
): Reply {
  const d = DEFAULTS[status] ?? (status >= 500 ? DEFAULTS[500]! : DEFAULTS[400]!);
  return json(status, {
    error: { message: message ?? d.message, type: d.type, param, code: code === undefined ? d.code : code },
  });
}

export const NO_KEY =
  "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth " +
  '(i.e. Authorization: Bearer YOUR_KEY).';

export const BAD_JSON =
  "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library " +
  'correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)';

export const missingParam = (name: string) =>
  openAiError(400, `Missing required parameter: '${name}'.`, name, 'missing_required_parameter');

export const requestId = () => `req_${randomUUID().replace(/-/g, '')}`;
