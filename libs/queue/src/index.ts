export * from './backoff';
export * from './ensure-job';
export * from './connection';
export * from './logger';
export * from './queues';
export * from './worker';
export * from './worker-health';
