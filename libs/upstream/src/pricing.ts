import type { CatalogModel } from './catalog';

type Priced = Pick<CatalogModel, 'inputPricePerMTok' | 'outputPricePerMTok' | 'inputOnly' | 'maxOutputTokens'>;

const PER_MILLION = 1_000_000n;
const ceilDiv = (a: bigint, b: bigint) => (a + b - 1n) / b;

/** The cost of reported usage in micro-units, rounded up to the micro-unit. Input-only models ignore output. */
export function costOf(model: Priced, usage: { inputTokens: number; outputTokens: number }): bigint {
  const input = BigInt(Math.max(0, Math.ceil(usage.inputTokens))) * model.inputPricePerMTok;
  const output = model.inputOnly ? 0n : BigInt(Math.max(0, Math.ceil(usage.outputTokens))) * model.outputPricePerMTok;
  return ceilDiv(input + output, PER_MILLION);
}

/**
 * An upper bound of the cost before the call, to reserve. A token is at least one byte of the text it encodes,
 * so the request's byte count bounds its input tokens; output is bounded by the caller's max tokens when given,
 * else by the model's maxOutputTokens.
 */
export function reservationFor(
  model: Priced,
  request: { inputBytes: number; maxOutputTokens?: number | null },
): bigint {
  const maxOut = Math.min(request.maxOutputTokens ?? model.maxOutputTokens, model.maxOutputTokens);
  return costOf(model, { inputTokens: request.inputBytes, outputTokens: maxOut });
}
