import express from 'express';
import { paidCall } from '../../billing/paid-call';
import type { EdgeDeps } from '../../deps';
import type { ChatProxy } from '../../proxy/chat-proxy';
import { CHAT_BODY_LIMIT } from '../chat';
import { createResponse } from './create-response';

/**
 * The OpenAI Responses route, proxied with streaming by the chat routes' proxy (same billing, limits, failover,
 * connection pool and memory of refused holds); with the image_generation tool, through the same failover and pool,
 * its images archived.
 */
export function responseRoutes(deps: EdgeDeps, proxy: ChatProxy): express.Router {
  const router = express.Router({ caseSensitive: true });
  router.post(
    ['/api/v1/responses', '/v1/responses'],
    ...paidCall(deps, { style: 'bearer', scope: 'llm.chat', bodyLimit: CHAT_BODY_LIMIT, passThrough: true }),
    createResponse(deps, proxy),
  );
  return router;
}
