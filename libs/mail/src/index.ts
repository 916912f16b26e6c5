export * from './mailer';
export * from './messages';
