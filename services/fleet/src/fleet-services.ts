/** Every long-running service `npm start` runs, in start order. */
export const FLEET = ['edge', 'evaluate-worker', 'archiver', 'task-runner', 'callback-dispatcher'] as const;
