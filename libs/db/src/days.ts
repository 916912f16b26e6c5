// Days as the ledger and the file lifetimes count them: UTC days of exactly 24 h (no time zone, no leap second), so a
// period of N days is N * DAY_MS everywhere (usage ranges, the usage report's day buckets, retention, library filters).
export const DAY_MS = 86_400_000;

export const plusDays = (from: Date, days: number): Date => new Date(from.getTime() + days * DAY_MS);
