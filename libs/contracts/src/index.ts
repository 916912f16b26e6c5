export * from './channels';
export * from './job-contract';
export * from './jobs';
