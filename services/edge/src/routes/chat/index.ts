import express from 'express';
import { paidCall } from '../../billing/paid-call';
import type { CredentialStyle } from '../../auth/authenticate';
import type { EdgeDeps } from '../../deps';
import type { ChatProxy } from '../../proxy/chat-proxy';
import { createChatCompletion } from './create-chat-completion';
import { createMessage } from './create-message';
import { GENERATE_CONTENT_PATH, generateContent } from './generate-content';

/** Chat bodies carry conversations and inline images (base64). */
export const CHAT_BODY_LIMIT = 20 * 1024 * 1024;

/** The chat completions route and the Anthropic- and Google-compatible routes, all proxied with streaming. */
export function chatRoutes(deps: EdgeDeps, proxy: ChatProxy): express.Router {
  const router = express.Router({ caseSensitive: true });
  const paid = (style: CredentialStyle) =>
    paidCall(deps, { style, scope: 'llm.chat', bodyLimit: CHAT_BODY_LIMIT, passThrough: true });
  router.post(['/api/v1/chat/completions', '/v1/chat/completions'], ...paid('bearer'), createChatCompletion(proxy));
  router.post('/v1/messages', ...paid('anthropic'), createMessage(proxy));
  router.post(GENERATE_CONTENT_PATH, ...paid('google'), generateContent(proxy));
  return router;
}
