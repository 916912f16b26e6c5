import { z } from 'zod';
import { PAID_CALL, UPSTREAM, operation } from '../../openapi/operation';
import { GENERATE_CONTENT_PATH } from './generate-content';
import { chatCompletionBody, generateContentBody, messageBody } from './schema';

const passThrough = (what: string) =>
  z.looseObject({}).describe(`${what}, as the provider answers it (passed through).`);
const STREAM = { 'text/event-stream': 'text' } as const;

export const chatApi = [
  operation({
    method: 'post',
    route: ['/api/v1/chat/completions', '/v1/chat/completions'],
    operationId: 'createChatCompletion',
    summary: 'OpenAI chat completions (streaming with stream: true)',
    description: 'Only the fields the gateway reads are checked; the rest go to the provider untouched.',
    tag: 'Chat',
    auth: 'bearer',
    scope: 'llm.chat',
    body: { json: chatCompletionBody },
    responses: {
      200: {
        description: 'The completion, or its server-sent events.',
        schema: passThrough('A chat.completion'),
        content: STREAM,
      },
    },
    errors: [...PAID_CALL, ...UPSTREAM],
  }),
  operation({
    method: 'post',
    route: '/v1/messages',
    operationId: 'createMessage',
    summary: 'Anthropic messages (streaming with stream: true)',
    tag: 'Chat',
    auth: 'anthropic',
    scope: 'llm.chat',
    headers: z.object({ 'anthropic-version': z.string().optional() }),
    body: { json: messageBody },
    responses: {
      200: {
        description: 'The message, or its server-sent events.',
        schema: passThrough('A message'),
        content: STREAM,
      },
    },
    errors: [...PAID_CALL, ...UPSTREAM],
  }),
  operation({
    method: 'post',
    route: GENERATE_CONTENT_PATH,
    paths: ['/v1beta/models/{model}:generateContent', '/v1beta/models/{model}:streamGenerateContent'],
    operationId: 'generateContent',
    summary: 'Gemini generateContent and streamGenerateContent (?alt=sse)',
    tag: 'Chat',
    auth: 'google',
    scope: 'llm.chat',
    params: z.object({ model: z.string().describe('The model id, `<provider>/<model>`.') }),
    query: z.object({ alt: z.enum(['sse']).optional() }),
    body: { json: generateContentBody },
    responses: {
      200: {
        description: 'The response, or its server-sent events.',
        schema: passThrough('A GenerateContentResponse'),
        content: STREAM,
      },
    },
    errors: [...PAID_CALL, ...UPSTREAM],
  }),
];
