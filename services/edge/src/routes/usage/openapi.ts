import { KEY_AUTH, operation } from '../../openapi/operation';
import { USAGE_QUERY, USAGE_RESPONSE } from './schema';

export const usageApi = [
  operation({
    method: 'get',
    route: '/api/v1/usage',
    operationId: 'getUsage',
    summary: "The workspace's usage and cost from the ledger, by day, model or key",
    description:
      'Totals equal the ledger over the range exactly. A range is ' +
      'at most 366 days; a day given as `to` counts through its end.',
    tag: 'Account',
    auth: 'bearer',
    scope: 'account.read',
    query: USAGE_QUERY.in,
    responses: { 200: { description: 'The rows and their totals.', schema: USAGE_RESPONSE } },
    errors: [...KEY_AUTH, 'invalid_request'],
  }),
];
