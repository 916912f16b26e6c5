// The command line: `<group> <action> [--flag value | --flag=value | --switch]... [--json]`. The command words come
// first (after any global flag); every other word must belong to a flag of that command. A mistake here is a
// UsageError: usage text on stderr and exit code 2, before any store is reached.
import type { z } from 'zod';

interface FlagSpec {
  name: string;
  /** Placeholder shown in usage (`--workspace WS`); absent for a switch, which takes no value. */
  value?: string;
  required?: boolean;
  help: string;
}

export interface CommandSpec {
  words: readonly string[];
  summary: string;
  flags: readonly FlagSpec[];
}

/** Flag name (without dashes) → its value, or true for a switch that was given. */
export type RawFlags = Record<string, string | true>;

const PROGRAM = 'npm run admin --';

export class UsageError extends Error {
  /** The command the mistake belongs to, for its usage text; absent when no command was recognised. */
  readonly command: CommandSpec | undefined;

  constructor(message: string, command?: CommandSpec) {
    super(message);
    this.name = 'UsageError';
    this.command = command;
  }
}

interface ParsedArgs<C extends CommandSpec> {
  command: C;
  flags: RawFlags;
  json: boolean;
}

export type ArgvResult<C extends CommandSpec> = ParsedArgs<C> | { help: true; command: C | undefined; json: boolean };

const GLOBAL_SWITCHES = new Set(['--json', '--help', '-h']);

export function parseArgv<C extends CommandSpec>(argv: readonly string[], commands: readonly C[]): ArgvResult<C> {
  let json = false;
  let help = false;
  let i = 0;
  const global = (token: string) => {
    if (token === '--json') json = true;
    else help = true;
  };
  while (i < argv.length && GLOBAL_SWITCHES.has(argv[i]!)) global(argv[i++]!);

  const words: string[] = [];
  while (i < argv.length && !argv[i]!.startsWith('-')) words.push(argv[i++]!);
  if (words[0] === 'help') return { help: true, command: findCommand(commands, words.slice(1)), json };
  const command = findCommand(commands, words);
  if (!command) {
    if (help && words.length === 0) return { help: true, command: undefined, json };
    if (words.length === 0) throw new UsageError('No command given.');
    throw new UsageError(`Unknown command "${words.join(' ')}".`);
  }

  const specs = new Map(command.flags.map((f) => [f.name, f]));
  const flags: RawFlags = {};
  for (; i < argv.length; i++) {
    const token = argv[i]!;
    if (GLOBAL_SWITCHES.has(token)) {
      global(token);
      continue;
    }
    if (!token.startsWith('--') || token === '--') throw new UsageError(`Unexpected argument "${token}".`, command);
    const eq = token.indexOf('=');
    const name = token.slice(2, eq === -1 ? undefined : eq);
    const spec = specs.get(name);
    if (!spec) throw new UsageError(`Unknown flag --${name} for "${command.words.join(' ')}".`, command);
    if (name in flags) throw new UsageError(`--${name} is given more than once.`, command);
    if (!spec.value) {
      if (eq !== -1) throw new UsageError(`--${name} is a switch and takes no value.`, command);
      flags[name] = true;
      continue;
    }
    let value: string | undefined;
    if (eq !== -1) value = token.slice(eq + 1);
    else {
      const next = argv[i + 1];
      // A following word that is itself a flag means this one's value was left out.
      if (next !== undefined && !next.startsWith('--')) {
        value = next;
        i++;
      }
    }
    if (value === undefined) throw new UsageError(`--${name} needs a value (${spec.value}).`, command);
    flags[name] = value;
  }
  if (help) return { help: true, command, json };
  const missing = command.flags.filter((f) => f.required && !(f.name in flags)).map((f) => `--${f.name}`);
  if (missing.length) throw new UsageError(`Missing ${missing.join(', ')}.`, command);
  return { command, flags, json };
}

function findCommand<C extends CommandSpec>(commands: readonly C[], words: readonly string[]): C | undefined {
  return commands.find((c) => c.words.length === words.length && c.words.every((w, k) => w === words[k]));
}

/**
 * Validates flag values with a zod schema keyed by flag name; every problem becomes one line of a UsageError.
 * Returns the schema's output (values parsed: amounts in micro-units, durations in ms, ...).
 */
export function flagValues<S extends z.ZodType>(schema: S, flags: RawFlags, command: CommandSpec): z.output<S> {
  const result = schema.safeParse(flags);
  if (result.success) return result.data;
  const lines = result.error.issues.map((issue) => {
    const flag = issue.path.length ? `--${String(issue.path[0])}` : command.words.join(' ');
    return `${flag}: ${issue.message}`;
  });
  throw new UsageError(lines.join('\n'), command);
}

function synopsis(command: CommandSpec): string {
  const parts = command.flags.map((f) => {
    const text = f.value ? `--${f.name} ${f.value}` : `--${f.name}`;
    return f.required ? text : `[${text}]`;
  });
  return [PROGRAM, ...command.words, ...parts, '[--json]'].join(' ');
}

export function commandUsage(command: CommandSpec): string {
  const width = Math.max(0, ...command.flags.map((f) => flagLabel(f).length));
  const lines = [`Usage: ${synopsis(command)}`, '', `  ${command.summary}`, ''];
  for (const f of command.flags)
    lines.push(`  ${flagLabel(f).padEnd(width)}  ${f.help}${f.required ? '' : ' (optional)'}`);
  lines.push(`  ${'--json'.padEnd(width)}  print exactly one JSON object on stdout`);
  return lines.join('\n');
}

function flagLabel(f: FlagSpec): string {
  return f.value ? `--${f.name} ${f.value}` : `--${f.name}`;
}

export function generalUsage(commands: readonly CommandSpec[]): string {
  const width = Math.max(...commands.map((c) => c.words.join(' ').length));
  return [
    `Usage: ${PROGRAM} <command> [flags] [--json]`,
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.words.join(' ').padEnd(width)}  ${c.summary}`),
    '',
    `Run "${PROGRAM} <command> --help" for its flags. With --json a command prints exactly one JSON object on stdout.`,
    'Exit codes: 0 done, 1 failed (not found, duplicate, ...), 2 wrong arguments.',
  ].join('\n');
}
