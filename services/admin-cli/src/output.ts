// What a command prints. With --json, stdout carries exactly one JSON object (the result or {"error":{...}}) and
// nothing else; without it, readable text. Progress and warnings always go to stderr. The Json type admits no
// BigInt and no Date, so money and times are converted (toAmount, toISOString) before they get here.

type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export interface Sink {
  write(text: string): unknown;
}

export interface Output {
  readonly json: boolean;
  /** Whether the one answer (result or error) has been given. */
  readonly answered: boolean;
  /** The command's one answer: `data` in --json mode, else the text `human` returns. */
  result(data: JsonObject, human: () => string): void;
  /** A domain failure (exit code 1). */
  error(code: string, message: string): void;
  /** Progress and notes for a person: stderr, in both modes. */
  note(message: string): void;
}

export function createOutput(json: boolean, stdout: Sink, stderr: Sink): Output {
  let answered = false;
  // A second answer would break the one-object promise of --json: that is a bug in the command, not input.
  const once = () => {
    if (answered) throw new Error('A command answered twice.');
    answered = true;
  };
  return {
    json,
    get answered() {
      return answered;
    },
    result(data, human) {
      once();
      stdout.write(json ? `${JSON.stringify(data)}\n` : `${human()}\n`);
    },
    error(code, message) {
      once();
      if (json) stdout.write(`${JSON.stringify({ error: { code, message } })}\n`);
      else stderr.write(`error: ${message} (${code})\n`);
    },
    note(message) {
      stderr.write(`${message}\n`);
    },
  };
}

const show = (value: Json): string => {
  if (value === null) return '-';
  if (Array.isArray(value)) return value.map(show).join(',') || '-';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
};

/** One record as aligned `name: value` lines. */
export function fields(data: JsonObject): string {
  const width = Math.max(...Object.keys(data).map((k) => k.length));
  return Object.entries(data)
    .map(([k, v]) => `${`${k}:`.padEnd(width + 1)} ${show(v)}`)
    .join('\n');
}

/** Records as a table with the given columns; "(none)" when empty. */
export function table(rows: readonly JsonObject[], columns: readonly string[]): string {
  if (rows.length === 0) return '(none)';
  const cells = rows.map((r) => columns.map((c) => show(r[c] ?? null)));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const line = (values: readonly string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.toUpperCase())), ...cells.map(line)].join('\n');
}

export const iso = (date: Date | null | undefined): string | null => (date ? date.toISOString() : null);
