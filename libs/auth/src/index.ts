export * from './api-key';
export * from './password';
export * from './scopes';
export * from './file-token';
export * from './roles';
export * from './session-token';
