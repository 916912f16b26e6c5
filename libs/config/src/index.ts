export * from './config';
export * from './duration';
export * from './encryption-keys';
