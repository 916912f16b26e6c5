import { z } from 'zod';
import { PAID_CALL, UPSTREAM, operation } from '../../openapi/operation';
import { responseBody } from './schema';

export const responseApi = [
  operation({
    method: 'post',
    route: ['/api/v1/responses', '/v1/responses'],
    operationId: 'createResponse',
    summary: 'OpenAI Responses (streaming with stream: true); input_image may name a workspace file by file_id',
    tag: 'Chat',
    auth: 'bearer',
    scope: 'llm.chat',
    body: { json: responseBody },
    responses: {
      200: {
        description: 'The response, or its server-sent events.',
        schema: z.looseObject({}).describe('A response object, as the provider answers it.'),
        content: { 'text/event-stream': 'text' },
      },
    },
    errors: [...PAID_CALL, ...UPSTREAM, 'file_not_found', 'invalid_image', 'storage_unavailable'],
  }),
];
