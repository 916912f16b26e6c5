export * from './s3';
export * from './objects';
export * from './generated-output';
