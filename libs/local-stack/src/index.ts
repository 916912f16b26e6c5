export * from './stack';
export * from './free-port';
export * from './wait-for-http';
export * from './service-command';
export * from './mail-catcher';
