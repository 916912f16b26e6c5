/** Every long-running service `npm start` runs, in start order. Each later issue adds its own. */
export const FLEET = ['edge', 'evaluate-worker', 'archiver', 'task-runner', 'callback-dispatcher'] as const;
