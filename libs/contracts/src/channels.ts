// Redis pub/sub channels shared by producers and consumers in different processes: their names only (publishing and
// subscribing are libs/queue's pub-sub.ts).

/** Carries an API key id whose cached look-ups every edge replica must drop (revocation, rotation, cap change). */
export const keyInvalidationChannel = (queuePrefix: string) => `${queuePrefix}:auth:key-invalidated`;

/**
 * Carries `model:<id>` or `channel:<id>`: a model or channel an admin changed (disabled, repriced, removed), whose
 * cached copy every process with a Catalog must drop (libs/upstream).
 */
export const catalogInvalidationChannel = (queuePrefix: string) => `${queuePrefix}:catalog:invalidated`;

/** Carries a channel id whose circuit-breaker state changed on one replica (libs/upstream SharedBreakerState). */
export const breakerEventsChannel = (queuePrefix: string) => `${queuePrefix}:upstream:breaker`;

/**
 * Carries the id of a task that has just reached a final state (completed, failed, canceled), published after the
 * transition committed; an edge holding a caller in `Prefer: wait` for that task then reads it once.
 */
export const taskFinishedChannel = (queuePrefix: string) => `${queuePrefix}:tasks:finished`;
