export * from './s3';
export * from './objects';
