export * from './config';
export * from './duration';
