export * from './config';
export * from './duration';
export * from './encryption-keys';
export * from './redis-url';
