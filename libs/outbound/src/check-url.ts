// The URL rules of DESIGN.md §5, checked before any byte leaves: https only, no userinfo, optionally the default
// port, and every address the host resolves to public unicast (or inside OUTBOUND_ALLOW_CIDRS).
import { promises as dns } from 'node:dns';
import { isIP } from 'node:net';
import { compileAllowList, judgeAddress } from './address-policy';
import { OutboundError } from './outbound-error';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address it has (A and AAAA). Tests inject one to play a hostile DNS. */
export type LookupFn = (hostname: string) => Promise<ResolvedAddress[]>;

/** getaddrinfo, as a socket would resolve the name (hosts file included), every address, in the system's order. */
export const systemLookup: LookupFn = async (hostname) => {
  const found = await dns.lookup(hostname, { all: true, verbatim: true });
  return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

export interface OutboundPolicy {
  /** OUTBOUND_ALLOW_CIDRS (config.outbound.allowCidrs): the only way to let a private address through. */
  allowCidrs?: readonly string[];
  /** Defaults to systemLookup. */
  lookup?: LookupFn;
}

export interface CheckUrlOptions extends OutboundPolicy {
  /** Refuse an explicit non-default port (image references, spec 4.4). */
  defaultPortOnly?: boolean;
}

export interface CheckedUrl {
  url: URL;
  /** The host without IPv6 brackets: a name, or the IP literal. */
  hostname: string;
  port: number;
  /** Every address the host resolved to, each one allowed; a request connects to these and nothing else. */
  addresses: ResolvedAddress[];
}

export async function checkUrl(input: string | URL, opts: CheckUrlOptions = {}): Promise<CheckedUrl> {
  let url: URL;
  try {
    // WHATWG parsing normalises numeric IPv4 hosts (2130706433, 0177.0.0.1, 0x7f.0.0.1, 127.1 → 127.0.0.1).
    url = new URL(String(input));
  } catch {
    throw new OutboundError('scheme', 'The URL is not a valid absolute URL.');
  }
  if (url.protocol !== 'https:')
    throw new OutboundError('scheme', `The URL must use https (got "${url.protocol.replace(/:$/, '')}").`);
  if (url.username || url.password)
    throw new OutboundError('userinfo', 'The URL must not contain a user name or password.');
  if (opts.defaultPortOnly && url.port !== '')
    throw new OutboundError('port', `The URL must use the default https port 443 (got ${url.port}).`);
  const hostname = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (!hostname) throw new OutboundError('scheme', 'The URL has no host.');
  const port = url.port === '' ? 443 : Number(url.port);

  const allow = compileAllowList(opts.allowCidrs);
  let resolved: ResolvedAddress[];
  if (isIP(hostname)) {
    resolved = [{ address: hostname, family: isIP(hostname) === 6 ? 6 : 4 }];
  } else {
    try {
      resolved = await (opts.lookup ?? systemLookup)(hostname);
    } catch (e) {
      throw new OutboundError('dns', `The host "${hostname}" could not be resolved.`, { cause: e });
    }
    if (resolved.length === 0) throw new OutboundError('dns', `The host "${hostname}" has no addresses.`);
  }

  const addresses: ResolvedAddress[] = [];
  for (const r of resolved) {
    let verdict: ReturnType<typeof judgeAddress>;
    try {
      verdict = judgeAddress(r.address, allow);
    } catch (e) {
      throw new OutboundError('dns', `The host "${hostname}" resolved to "${r.address}", which is not an IP address.`, {
        cause: e,
      });
    }
    // Every address must pass, not just the first: a name with one private record among public ones could be
    // made to connect to it.
    if (!verdict.allowed) {
      const what =
        hostname === r.address ? `The address ${r.address}` : `The host "${hostname}" resolves to ${r.address}, which`;
      const range = describeRange(verdict.range);
      // An IP literal is the caller's own text; what a name resolves to is not theirs to learn from a refusal.
      const rule = hostname === r.address ? `The address ${r.address} is not a public address (${range}).` : undefined;
      const message = `${what} is not a public address (${range}).`;
      throw new OutboundError('private_address', message, { rule, range: verdict.range });
    }
    if (!addresses.some((a) => a.address === verdict.address))
      addresses.push({ address: verdict.address, family: verdict.family });
  }
  return { url, hostname, port, addresses };
}

function describeRange(range: string): string {
  const names: Record<string, string> = {
    unspecified: 'unspecified',
    broadcast: 'broadcast',
    multicast: 'multicast',
    linkLocal: 'link-local',
    loopback: 'loopback',
    carrierGradeNat: 'carrier-grade NAT',
    private: 'private network',
    reserved: 'reserved',
    uniqueLocal: 'unique local',
    ipv4Mapped: 'IPv4-mapped, to a non-public IPv4 address',
    rfc6052: 'NAT64, to a non-public IPv4 address',
    deprecatedSiteLocal: 'site-local',
  };
  return names[range] ?? (range === 'unicast' ? 'not globally routable' : range);
}
