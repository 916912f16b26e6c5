// callback_url at creation (spec §6, DESIGN.md §5): https, no userinfo, every address the name resolves to public
// unicast (OUTBOUND_ALLOW_CIDRS aside), and a TLS certificate that verifies for the host, proved by a handshake with
// the very address that was checked. Any port is allowed (a receiver may listen on 8443); image references alone
// are held to 443.
//
// This is the check at submission; the dispatcher checks again at each delivery and pins its connection to the
// address it checked then, so a name that later resolves elsewhere (DNS rebinding) reaches nothing unchecked, and it
// follows no redirect. The handshake here sends no HTTP request, so no answer of the receiver (a redirect to a
// private address among them) can play a part at creation.
import { errors } from '@gensvc/errors';
import {
  checkTls,
  checkUrl,
  isOutboundError,
  type CheckTlsOptions,
  type CheckedUrl,
  type TlsVerdict,
} from '@gensvc/outbound';
import type { EdgeDeps } from '../../deps';

/** The handshake must complete within this (the dispatcher's own connect timeout is the same). */
const CALLBACK_TLS_TIMEOUT_MS = 5_000;
/** How long a handshake that verified stands for the same host, port and checked addresses. */
const CALLBACK_TLS_CACHE_MS = 60_000;
const CACHE_MAX = 10_000;

/**
 * Verified handshakes by host, port and the addresses checkUrl just approved, so a burst of tasks to one receiver
 * makes one handshake, not one each. The name is still resolved and every address judged at each creation (above):
 * only the certificate check is reused, and only for the very same addresses, so an answer that changes (rebinding)
 * is checked afresh. A check in flight is shared by the creations that arrive meanwhile; a failed check is never
 * kept, so the next creation tries again (those that shared it get its failure). One per edge (createEdgeDeps), so
 * edges with other trust or policy, as tests start, never share a verdict.
 */
export class VerifiedTlsCache {
  private readonly verified = new Map<string, { at: number; check: Promise<TlsVerdict> }>();

  check(checked: CheckedUrl, ca: CheckTlsOptions['ca']): Promise<TlsVerdict> {
    const key = `${checked.hostname}:${checked.port} ${checked.addresses.map((a) => a.address).join(',')}`;
    const now = Date.now();
    const hit = this.verified.get(key);
    if (hit && now - hit.at < CALLBACK_TLS_CACHE_MS) return hit.check;
    if (this.verified.size >= CACHE_MAX) this.verified.clear();
    const check = checkTls(checked, { ca, timeoutMs: CALLBACK_TLS_TIMEOUT_MS });
    const entry = { at: now, check };
    this.verified.set(key, entry);
    check.catch(() => this.verified.get(key) === entry && this.verified.delete(key));
    return check;
  }
}

/** The URL, normalised, or 400 invalid_callback_url whose message names the rule it breaks. */
export async function checkCallbackUrl(
  deps: Pick<EdgeDeps, 'config' | 'outbound' | 'callbackTls'>,
  value: string,
): Promise<string> {
  try {
    const checked = await checkUrl(value, {
      allowCidrs: deps.config.outbound.allowCidrs,
      lookup: deps.outbound?.lookup,
    });
    await deps.callbackTls.check(checked, deps.outbound?.ca);
    return checked.url.href;
  } catch (e) {
    if (!isOutboundError(e)) throw e;
    // The rule, never what the network answered (the address a name resolved to, a connection error): a refusal
    // must not let a caller map hosts and ports through the gateway.
    throw errors.invalidCallbackUrl(
      `callback_url was refused (${e.reason === 'timeout' || e.reason === 'connection' ? 'tls' : e.reason}): ${e.rule}`,
    );
  }
}
