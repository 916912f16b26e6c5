export * from './address-policy';
export * from './check-tls';
export * from './check-url';
export * from './fetch-checked';
export * from './outbound-error';
