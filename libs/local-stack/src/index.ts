export * from './stack';
export * from './free-port';
