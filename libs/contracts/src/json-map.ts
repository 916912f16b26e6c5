// The one way a caller's JSON object is read as a map. zod's record builds a new plain object and silently skips a
// "__proto__" key (assigning it would replace the prototype), so the request would go on, and be billed, without
// that entry. Here every own key, "__proto__" included, is checked first, and a bad one refuses the whole map.
import { z } from 'zod';

/** A JSON object as JSON.parse makes it (own keys only, "__proto__" among them when it was sent). */
export const isJsonObject = (v: unknown): v is Record<string, unknown> => {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
};

/** Any JSON object, passed on as it came (never rebuilt, so no key of it is lost). */
export const jsonObject = (message: string) => z.custom<Record<string, unknown>>(isJsonObject, { error: message });

export interface JsonMapRules {
  /** Every key must match; the message names the rule (the key is the issue's path). */
  key: RegExp;
  keyMessage: string;
  /** Counted on the keys as sent, before any entry is parsed. */
  min: number;
  max: number;
  countMessage: string;
  typeMessage: string;
}

export function jsonMap<V extends z.ZodType>(rules: JsonMapRules, value: V) {
  return jsonObject(rules.typeMessage)
    .check(
      z.refine((r) => {
        const n = Object.keys(r).length;
        return n >= rules.min && n <= rules.max;
      }, rules.countMessage),
    )
    .superRefine((r, ctx) => {
      for (const key of Object.keys(r)) {
        if (!rules.key.test(key)) ctx.addIssue({ code: 'custom', message: rules.keyMessage, path: [key], input: key });
      }
    })
    .pipe(z.record(z.string(), value));
}
