import { ERROR_CODES } from './app-error';

/** docs/errors.md's table of codes (between its error-codes markers), made from ERROR_CODES: status, then code. */
export function errorCodesTable(): string {
  const rows = Object.entries(ERROR_CODES)
    .sort(([a, x], [b, y]) => x.status - y.status || a.localeCompare(b))
    .map(([code, { status, description }]) => `| ${status} | \`${code}\` | ${description.replace(/\|/g, '\\|')} |`);
  return ['| status | code | meaning |', '|---|---|---|', ...rows].join('\n');
}
