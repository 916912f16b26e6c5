export * from './channels';
export * from './evaluate';
export * from './job-contract';
export * from './jobs';
export * from './task-output';
