export * from './breaker';
export * from './catalog';
export * from './failover';
export * from './pricing';
export * from './upstream-http';
export * from './shared-state';
export * from './upstream-metrics';
