export * from './context';
export * from './databases';
export * from './factories';
export * from './processes';
export * as sampleMedia from './sample-media';
