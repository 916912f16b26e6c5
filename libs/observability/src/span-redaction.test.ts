import type { UndiciRequest } from '@opentelemetry/instrumentation-undici';
import { httpSpanRedaction, undiciSpanRedaction } from './span-redaction';

describe('span redaction', () => {
  it('gives an outbound undici span its URL with the values of token, key and signature redacted', () => {
    const request = {
      origin: 'https://api.example.com',
      path: '/v1/x?key=k-secret&model=m&token=t-secret&signature=s-secret',
    } as UndiciRequest;
    const attributes = undiciSpanRedaction.startSpanHook!(request);
    expect(attributes).toEqual({
      'url.full': 'https://api.example.com/v1/x?key=REDACTED&model=m&token=REDACTED&signature=REDACTED',
      'url.query': '?key=REDACTED&model=m&token=REDACTED&signature=REDACTED',
    });
    const plain = undiciSpanRedaction.startSpanHook!({
      origin: 'https://api.example.com',
      path: '/v1/x?model=m',
    } as UndiciRequest);
    expect(plain['url.full']).toBe('https://api.example.com/v1/x?model=m');
  });

  it('has the HTTP instrumentation redact them on both sides, and record no raw path on a server span', () => {
    for (const list of [httpSpanRedaction.redactedQueryParams, httpSpanRedaction.redactedQueryParamsServer]) {
      expect(list).toEqual(expect.arrayContaining(['token', 'key', 'signature', 'X-Amz-Signature']));
    }
    expect(httpSpanRedaction.startIncomingSpanHook!({} as never)).toEqual({ 'url.path': undefined });
  });
});
