import { paidCall } from '../../billing/paid-call';
import type { CredentialStyle } from '../../auth/authenticate';
import type { EdgeDeps } from '../../deps';
import type { RouteSpec } from '../../http/hot-routes';
import type { ChatProxy } from '../../proxy/chat-proxy';
import { createChatCompletion } from './create-chat-completion';
import { createMessage } from './create-message';
import { GENERATE_CONTENT_PATH, generateContent } from './generate-content';

/** Chat bodies carry conversations and inline images (base64). */
export const CHAT_BODY_LIMIT = 20 * 1024 * 1024;

/** The chat completions route and the Anthropic- and Google-compatible routes, all proxied with streaming. */
export function chatRoutes(deps: EdgeDeps, proxy: ChatProxy): RouteSpec[] {
  const paid = (style: CredentialStyle) => paidCall(deps, { style, scope: 'llm.chat', bodyLimit: CHAT_BODY_LIMIT, passThrough: true });
  return [
    { path: ['/api/v1/chat/completions', '/v1/chat/completions'], handlers: [...paid('bearer'), createChatCompletion(proxy)] },
    { path: '/v1/messages', handlers: [...paid('anthropic'), createMessage(proxy)] },
    { path: GENERATE_CONTENT_PATH, handlers: [...paid('google'), generateContent(proxy)] },
  ];
}
