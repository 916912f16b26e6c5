export * from './channels';
export * from './evaluate';
export * from './job-contract';
export * from './jobs';
export * from './task-output';
export * from './task-envelope';
export * from './task-operations';
export * from './json-map';
