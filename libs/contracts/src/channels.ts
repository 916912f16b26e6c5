// Redis pub/sub channels shared by producers and consumers in different processes.

/** Carries an API key id whose cached look-ups every edge replica must drop (revocation, rotation, cap change). */
export const keyInvalidationChannel = (queuePrefix: string) => `${queuePrefix}:auth:key-invalidated`;
