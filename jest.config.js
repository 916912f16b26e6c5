/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>'],
  testPathIgnorePatterns: ['/node_modules/', '/dist/', '<rootDir>/.data/', '<rootDir>/.tools/'],
  testMatch: ['**/*.test.ts'],
  modulePathIgnorePatterns: ['<rootDir>/.*/dist/'],
  // jose is ESM only: Jest (unlike Node 20.19+) cannot require it, so it is compiled like our own sources.
  transformIgnorePatterns: ['/node_modules/(?!(\\.pnpm/(jose)@[^/]+/node_modules/)?(jose)/)'],
  transform: {
    '^.+\\.(ts|js|mjs)$': [
      '@swc/jest',
      { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } },
    ],
  },
  moduleNameMapper: {
    '^@gensvc/db/testing$': '<rootDir>/libs/db/src/testing.ts',
    '^@gensvc/([^/]+)$': '<rootDir>/libs/$1/src/index.ts',
  },
  globalSetup: '<rootDir>/libs/testing/src/global-setup.ts',
  globalTeardown: '<rootDir>/libs/testing/src/global-teardown.ts',
  testTimeout: 30_000,
};
