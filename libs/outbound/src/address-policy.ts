// Which IP addresses an outbound request may reach (DESIGN.md §5): public unicast only, unless the deployment's
// OUTBOUND_ALLOW_CIDRS names the range. An address that embeds an IPv4 address (IPv4-mapped ::ffff:a.b.c.d, NAT64
// 64:ff9b::a.b.c.d) is judged by the IPv4 address it reaches.
import ipaddr from 'ipaddr.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;
type Cidr = [Address, number];

/** An allow-list compiled once from OUTBOUND_ALLOW_CIDRS entries ("127.0.0.1/32", "::1", "10.0.0.0/8"). */
export interface AllowList {
  readonly entries: readonly string[];
  readonly ranges: readonly Cidr[];
}

/**
 * Compiled lists by the entries array itself (the config's, made once): a memo of a pure function that holds nothing
 * of any request, kept here so checkUrl, called per request with that same array, does not parse CIDRs per request.
 * A WeakMap, so a list whose config is gone goes with it.
 */
const compiled = new WeakMap<readonly string[], AllowList>();

/** No entries: one array, so every caller without a list shares one compiled list (and its verdicts). */
const NO_ENTRIES: readonly string[] = Object.freeze([]);

export function compileAllowList(entries: readonly string[] = NO_ENTRIES): AllowList {
  const cached = compiled.get(entries);
  if (cached) return cached;
  const ranges = entries.map((entry): Cidr => {
    const text = entry.trim();
    if (text.includes('/')) {
      const [addr, bits] = ipaddr.parseCIDR(text);
      return [unmap(addr), addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress() ? bits - 96 : bits];
    }
    const addr = unmap(ipaddr.parse(text));
    return [addr, addr.kind() === 'ipv4' ? 32 : 128];
  });
  const list = { entries: [...entries], ranges };
  compiled.set(entries, list);
  return list;
}

/** ::ffff:a.b.c.d is a.b.c.d: a socket to it reaches the IPv4 host. */
function unmap(addr: Address): Address {
  return addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress()
    ? (addr as ipaddr.IPv6).toIPv4Address()
    : addr;
}

// Global unicast IPv6 is 2000::/3; everything outside it (the IPv4-compatible ::/96, discard 100::/64, segment
// routing 5f00::/16, future allocations) is refused even where ipaddr.js calls it 'unicast'.
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96');

function isPublicV4(addr: ipaddr.IPv4): boolean {
  return addr.range() === 'unicast';
}

function isPublicV6(addr: ipaddr.IPv6): boolean {
  if (addr.isIPv4MappedAddress()) return isPublicV4(addr.toIPv4Address());
  if (addr.match(NAT64_WELL_KNOWN)) {
    const bytes = addr.toByteArray();
    return isPublicV4(ipaddr.IPv4.parse(bytes.slice(12).join('.')));
  }
  return addr.range() === 'unicast' && addr.match(GLOBAL_UNICAST_V6);
}

export interface AddressVerdict {
  allowed: boolean;
  /** The address to connect to: the IPv4 address itself for an IPv4-mapped one. */
  address: string;
  family: 4 | 6;
  /** ipaddr.js's name for the range the address is in ('private', 'loopback', 'unicast', ...). */
  range: string;
}

/**
 * Verdicts by address text, per compiled list: the memo of a pure function (the text and the list decide the
 * verdict), so the address a request connects to is not parsed and matched again on every request. Bounded: a
 * process that meets many addresses clears it now and then.
 */
const verdicts = new WeakMap<AllowList, Map<string, Readonly<AddressVerdict>>>();
const MAX_VERDICTS = 1024;

/** Judges one textual IP address. Throws for text that is not an IP address. */
export function judgeAddress(text: string, allow: AllowList): Readonly<AddressVerdict> {
  let memo = verdicts.get(allow);
  if (!memo) {
    memo = new Map();
    verdicts.set(allow, memo);
  }
  const known = memo.get(text);
  if (known) return known;
  const verdict = Object.freeze(judge(text, allow));
  if (memo.size >= MAX_VERDICTS) memo.clear();
  memo.set(text, verdict);
  return verdict;
}

function judge(text: string, allow: AllowList): AddressVerdict {
  const parsed = ipaddr.parse(text);
  const addr = unmap(parsed);
  const family = addr.kind() === 'ipv4' ? 4 : 6;
  const range = parsed.range();
  const listed = allow.ranges.some(([net, bits]) => net.kind() === addr.kind() && addr.match(net, bits));
  const allowed = listed || (family === 4 ? isPublicV4(addr as ipaddr.IPv4) : isPublicV6(addr as ipaddr.IPv6));
  return { allowed, address: addr.toString(), family, range };
}

/** Whether `text` is a public unicast address (no allow-list). */
export function isPublicAddress(text: string): boolean {
  return judgeAddress(text, compileAllowList()).allowed;
}
