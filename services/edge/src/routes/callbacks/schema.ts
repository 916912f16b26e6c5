// The callback tools' bodies: recovery of parked deliveries and a test callback. The API's routes and the
// dashboard's take the same bodies.
import { z } from 'zod';

/** Deliveries one recovery restarts; the answer's has_more says when a further call has more to do. */
export const RECOVER_LIMIT = 1_000;
/** An https URL longer than this is no one's receiver (as callback_url at creation). */
const MAX_URL_CHARS = 2_048;

export const RECOVER_BODY = z.strictObject({
  since: z.iso
    .datetime({ offset: true, error: 'must be an ISO 8601 time with a zone (e.g. "2026-01-31T00:00:00Z")' })
    .transform((s) => new Date(s))
    .refine((d) => !Number.isNaN(d.getTime()), 'must be a real time (no 31 February)')
    // A second's grace for the caller's clock: "now" as the caller read it is still accepted.
    .refine((d) => d.getTime() <= Date.now() + 1_000, 'must not be in the future'),
});

export const TEST_CALLBACK_BODY = z.strictObject({
  url: z
    .string({ error: 'must be a string (an https URL)' })
    .min(1, 'must not be empty')
    .max(MAX_URL_CHARS, `is at most ${MAX_URL_CHARS} characters`),
});
