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
import { checkTls, checkUrl, isOutboundError } from '@gensvc/outbound';
import type { EdgeDeps } from '../../deps';

/** The handshake must complete within this (the dispatcher's own connect timeout is the same). */
export const CALLBACK_TLS_TIMEOUT_MS = 5_000;

/** The URL, normalised, or 400 invalid_callback_url whose message names the rule it breaks. */
export async function checkCallbackUrl(deps: Pick<EdgeDeps, 'config' | 'outbound'>, value: string): Promise<string> {
  try {
    const checked = await checkUrl(value, { allowCidrs: deps.config.outbound.allowCidrs, lookup: deps.outbound?.lookup });
    await checkTls(checked, { ca: deps.outbound?.ca, timeoutMs: CALLBACK_TLS_TIMEOUT_MS });
    return checked.url.href;
  } catch (e) {
    if (!isOutboundError(e)) throw e;
    // The rule, never what the network answered (the address a name resolved to, a connection error): a refusal
    // must not let a caller map hosts and ports through the gateway.
    throw errors.invalidCallbackUrl(`callback_url was refused (${e.reason === 'timeout' || e.reason === 'connection' ? 'tls' : e.reason}): ${e.rule}`);
  }
}
