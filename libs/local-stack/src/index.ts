export * from './stack';
export * from './free-port';
export * from './wait-for-http';
export * from './service-command';
export * from './local-secrets';
export * from './mail-catcher';
export * from './pgbouncer';
export * from './redis-cluster';
