export * from './s3';
export * from './part-buffers';
export * from './objects';
export * from './generated-output';
