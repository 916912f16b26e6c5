// Signs task callbacks (dispatcher) and verifies them (receivers). The Express example in examples/ is not exported.
export * from './headers';
export * from './secret';
export * from './delivery-id';
export { computeSignature, signatureHeader, type RawBody } from './signature';
export * from './standard-webhooks';
export * from './verify';
export * from './provider-webhooks';
