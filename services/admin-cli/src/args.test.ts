import { z } from 'zod';
import { commandUsage, flagValues, generalUsage, parseArgv, UsageError, type CommandSpec } from './args';
import { amount, duration, list } from './flag-values';

const create: CommandSpec = {
  words: ['key', 'create'],
  summary: 'Create a key.',
  flags: [
    { name: 'workspace', value: 'WS', required: true, help: 'workspace id' },
    { name: 'priority', value: 'N', help: 'a number' },
    { name: 'input-only', help: 'a switch' },
  ],
};
const migrate: CommandSpec = { words: ['migrate'], summary: 'Migrate.', flags: [] };
const commands = [create, migrate];

const usageError = (argv: string[]) => {
  try {
    parseArgv(argv, commands);
  } catch (e) {
    if (e instanceof UsageError) return e.message;
    throw e;
  }
  throw new Error('no usage error');
};

describe('parseArgv', () => {
  it('reads command words, values in both spellings, switches and --json anywhere', () => {
    expect(
      parseArgv(['key', 'create', '--workspace', 'ws_1', '--priority=-3', '--input-only', '--json'], commands),
    ).toEqual({
      command: create,
      flags: { workspace: 'ws_1', priority: '-3', 'input-only': true },
      json: true,
    });
    expect(parseArgv(['--json', 'migrate'], commands)).toEqual({ command: migrate, flags: {}, json: true });
    expect(parseArgv(['key', 'create', '--priority', '-1', '--workspace', 'w'], commands)).toMatchObject({
      flags: { priority: '-1' },
    });
  });

  it('answers help for a command or in general', () => {
    expect(parseArgv(['key', 'create', '--help'], commands)).toEqual({ help: true, command: create, json: false });
    expect(parseArgv(['--help'], commands)).toEqual({ help: true, command: undefined, json: false });
    expect(parseArgv(['help', 'migrate'], commands)).toEqual({ help: true, command: migrate, json: false });
  });

  it('rejects every kind of mistake with a usage error', () => {
    expect(usageError([])).toBe('No command given.');
    expect(usageError(['key'])).toBe('Unknown command "key".');
    expect(usageError(['key', 'create'])).toBe('Missing --workspace.');
    expect(usageError(['key', 'create', '--workspace'])).toBe('--workspace needs a value (WS).');
    expect(usageError(['key', 'create', '--workspace', '--json'])).toBe('--workspace needs a value (WS).');
    expect(usageError(['key', 'create', '--workspace', 'a', '--workspace', 'b'])).toBe(
      '--workspace is given more than once.',
    );
    expect(usageError(['key', 'create', '--workspace', 'a', '--nope'])).toMatch(/^Unknown flag --nope/);
    expect(usageError(['key', 'create', '--workspace', 'a', 'stray'])).toBe('Unexpected argument "stray".');
    expect(usageError(['key', 'create', '--workspace', 'a', '--input-only=yes'])).toMatch(/takes no value/);
  });
});

describe('flagValues', () => {
  const schema = z.object({
    amount: amount({ positive: true }),
    grace: duration({ allowZero: true }).prefault('24h'),
    scopes: list.optional(),
  });

  it('parses values into micro-units, milliseconds and lists', () => {
    expect(flagValues(schema, { amount: '10.5', scopes: 'a, b,a,' }, create)).toEqual({
      amount: 10_500_000n,
      grace: 86_400_000,
      scopes: ['a', 'b'],
    });
    expect(flagValues(schema, { amount: '1', grace: '0' }, create).grace).toBe(0);
  });

  it('reports every bad value, each naming its flag', () => {
    expect(() => flagValues(schema, { amount: 'ten', grace: 'soon', scopes: ',' }, create)).toThrow(
      new RegExp(
        String.raw`--amount: "ten" is not an amount[^\n]*\n--grace: "soon" is not a duration[^\n]*\n` +
          '--scopes: must name at least one entry',
      ),
    );
    expect(() => flagValues(schema, { amount: '0' }, create)).toThrow('--amount: must be greater than 0');
  });
});

describe('usage text', () => {
  it('lists commands and flags', () => {
    expect(generalUsage(commands)).toContain('key create');
    expect(commandUsage(create)).toContain('key create --workspace WS [--priority N] [--input-only] [--json]');
  });
});
