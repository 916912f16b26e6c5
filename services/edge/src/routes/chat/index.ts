import express, { type NextFunction, type Request, type Response } from 'express';
import { paidCall } from '../../billing/paid-call';
import type { CredentialStyle } from '../../auth/authenticate';
import type { EdgeDeps } from '../../deps';
import { ChatProxy } from '../../proxy/chat-proxy';
import { createChatCompletion } from './create-chat-completion';
import { createMessage } from './create-message';
import { GENERATE_CONTENT_PATH, generateContent } from './generate-content';

/** Chat bodies carry conversations and inline images (base64). */
export const CHAT_BODY_LIMIT = 20 * 1024 * 1024;

export type ChatRouter = express.Router & {
  /** Settles what is still being settled and closes the upstream connections: call it in shutdown, after HTTP stops. */
  close(): Promise<void>;
};

/**
 * The official Anthropic SDK (1.x) sends its key as "Authorization: Bearer <key>", which Anthropic accepts beside
 * x-api-key; the 'anthropic' credential style reads x-api-key only, so a bearer key is read as one. x-api-key wins
 * when both are sent.
 */
function bearerAsAnthropicKey(req: Request, _res: Response, next: NextFunction) {
  const authorization = req.headers.authorization;
  if (req.headers['x-api-key'] === undefined && authorization !== undefined && /^bearer /i.test(authorization)) {
    req.headers['x-api-key'] = authorization.slice(7);
  }
  next();
}

/** The chat completions route and the Anthropic- and Google-compatible routes, all proxied with streaming. */
export function chatRoutes(deps: EdgeDeps): ChatRouter {
  const proxy = new ChatProxy(deps);
  const paid = (style: CredentialStyle) => paidCall(deps, { style, scope: 'llm.chat', bodyLimit: CHAT_BODY_LIMIT });
  const router = express.Router({ caseSensitive: true });
  router.post(['/api/v1/chat/completions', '/v1/chat/completions'], ...paid('bearer'), createChatCompletion(proxy));
  router.post('/v1/messages', bearerAsAnthropicKey, ...paid('anthropic'), createMessage(proxy));
  router.post(GENERATE_CONTENT_PATH, ...paid('google'), generateContent(proxy));
  return Object.assign(router, { close: () => proxy.close() });
}
