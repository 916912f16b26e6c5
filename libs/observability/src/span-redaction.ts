// Secrets kept out of exported spans, through the instrumentations' documented options: the values of query
// parameters that carry credentials (a signed link's `token`, Google's `?key=`, signatures) are replaced by
// REDACTED in every recorded URL, and an HTTP server span records its route template instead of its raw path, which
// can hold a secret (an invitation token): nameServerSpan sets both once the router has matched.
import type { HttpInstrumentationConfig } from '@opentelemetry/instrumentation-http';
import type { UndiciInstrumentationConfig } from '@opentelemetry/instrumentation-undici';

/** What a secret value is replaced by: the HTTP instrumentation's own word. */
const REDACTED = 'REDACTED';

/**
 * Ours first, then the HTTP instrumentation's built-in list (its option replaces the list rather than adding to it).
 */
const SECRET_QUERY_PARAMS = [
  'token',
  'key',
  'signature',
  'sig',
  'Signature',
  'AWSAccessKeyId',
  'X-Goog-Signature',
  'X-Amz-Signature',
  'X-Amz-Credential',
  'X-Amz-Security-Token',
];

/** `url` with the values of its secret query parameters replaced; a URL without any is returned as it is. */
function redactUrl(url: URL): URL {
  if (!SECRET_QUERY_PARAMS.some((name) => url.searchParams.has(name))) return url;
  const copy = new URL(url);
  for (const name of SECRET_QUERY_PARAMS) if (copy.searchParams.has(name)) copy.searchParams.set(name, REDACTED);
  return copy;
}

export const httpSpanRedaction: HttpInstrumentationConfig = {
  redactedQueryParams: SECRET_QUERY_PARAMS,
  redactedQueryParamsServer: SECRET_QUERY_PARAMS,
  // No raw path on a server span, even one that ends before its route is known (a client that went away).
  startIncomingSpanHook: () => ({ 'url.path': undefined }),
};

export const undiciSpanRedaction: UndiciInstrumentationConfig = {
  // The hook's attributes replace the instrumentation's own, before the span starts.
  startSpanHook: (request) => {
    try {
      const url = redactUrl(new URL(request.path, request.origin));
      return { 'url.full': url.toString(), 'url.query': url.search };
    } catch {
      return {};
    }
  },
};
