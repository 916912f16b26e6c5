// What the sender of a refused URL is told (OutboundError.rule): the rule that failed, never the addresses a name
// resolved to nor the error the network gave, which stay in `message` for logs.
import { rejectionOf } from '@gensvc/testing';
import { checkUrl, type ResolvedAddress } from './check-url';
import { connectFailure } from './fetch-checked';
import { OutboundError, UNREACHABLE_RULE } from './outbound-error';

const address: ResolvedAddress = { address: '203.0.113.7', family: 4 };
const url = new URL('https://hooks.example:8443/cb');
const errno = (code: string) => Object.assign(new Error(`connect ${code} 203.0.113.7:8443`), { code });

describe('OutboundError.rule', () => {
  it('says a name resolves to a non-public address without saying which, while message keeps it', async () => {
    const e = await rejectionOf(
      checkUrl('https://internal.example/cb', { lookup: async () => [{ address: '10.0.0.5', family: 4 }] }),
      OutboundError,
    );
    expect(e.reason).toBe('private_address');
    expect(e.message).toMatch(/10\.0\.0\.5/);
    expect(e.rule).toBe(
      'Every address the host resolves to must be a public unicast address; this host resolves to one that is not.',
    );
  });

  it("names an IP literal, the caller's own text, and its range", async () => {
    const e = await rejectionOf(checkUrl('https://[::1]/cb'), OutboundError);
    expect(e.rule).toBe('The address ::1 is not a public address (loopback).');
  });

  it('gives one rule for a refused, reset, timed-out or non-TLS connection: no port probing', () => {
    const failures = [
      connectFailure(errno('ECONNREFUSED'), 'tcp', url, address),
      connectFailure(errno('ECONNRESET'), 'tcp', url, address),
      connectFailure(errno('ETIMEDOUT'), 'tcp', url, address),
      connectFailure(errno('EHOSTUNREACH'), 'tcp', url, address),
      connectFailure(errno('ERR_SSL_WRONG_VERSION_NUMBER'), 'tls', url, address),
      connectFailure(errno('ECONNRESET'), 'tls', url, address),
    ];
    expect(new Set(failures.map((f) => f.rule))).toEqual(new Set([UNREACHABLE_RULE]));
    expect(failures[0]!.message).toMatch(/203\.0\.113\.7.*ECONNREFUSED/);
    for (const f of failures) expect(f.rule).not.toMatch(/203\.0\.113\.7|E[A-Z]{4,}|ERR_/);
  });

  it("names a certificate rule, which the URL's owner can act on, without the error code", () => {
    const e = connectFailure(errno('DEPTH_ZERO_SELF_SIGNED_CERT'), 'tls', url, address);
    expect(e.reason).toBe('tls');
    expect(e.rule).toBe(
      "The server's TLS certificate is self-signed; it must be issued by a trusted certificate authority.",
    );
  });

  it('keeps the URL-shape rules as their messages, and an HTTP status where one was answered', () => {
    expect(new OutboundError('scheme', 'The URL must use https (got "ftp").').rule).toBe(
      'The URL must use https (got "ftp").',
    );
    expect(new OutboundError('http_status', 'images.example answered 404.', { status: 404 }).rule).toBe(
      'The server must answer with a 2xx status; it answered 404.',
    );
  });
});
