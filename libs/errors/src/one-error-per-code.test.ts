// One error per code: every code has one status, written once in ERROR_CODES; every AppError is made by a
// factory of libs/errors. The scan below is the lint: it fails on `new AppError` anywhere outside libs/errors, and on
// a `status:` written beside a `code:` in an error object outside it (a second place that gives a code a status).
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { AppError, ERROR_CODES, errors, isErrorCode, statusOf } from './app-error';
import { errorCodesTable } from './error-codes-table';

const root = join(__dirname, '..', '..', '..');

function sources(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (['node_modules', 'dist', 'generated', '.data', '.tools', '.git'].includes(entry.name)) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) sources(path, out);
    else if (/\.(ts|tsx)$/.test(entry.name) && !/\.d\.ts$/.test(entry.name)) out.push(path);
  }
  return out;
}

const outsideErrors = () =>
  ['libs', 'services']
    .flatMap((d) => sources(join(root, d)))
    .map((p) => relative(root, p))
    .filter((p) => !p.startsWith('libs/errors/'));

describe('one error per code', () => {
  it('makes no AppError outside libs/errors: every error comes from a named factory', () => {
    const offenders = outsideErrors().filter((p) => /new\s+AppError\s*\(/.test(readFileSync(join(root, p), 'utf8')));
    expect(offenders).toEqual([]);
  });

  it('writes no status beside a code outside libs/errors (no second status for a code)', () => {
    // An object literal with both a numeric status and a string code: how a code would get a second status.
    const status = String.raw`\bstatus:\s*\d{3}\b`;
    const code = "\\bcode:\\s*['`][a-z_]+['`]";
    const pair = new RegExp(String.raw`\{[^{}]*${status}[^{}]*${code}|\{[^{}]*${code}[^{}]*${status}`);
    const offenders = outsideErrors()
      .filter(
        (p) =>
          !/\.test\.tsx?$/.test(p) && !p.startsWith('services/upstream-sim/') && !p.startsWith('services/dashboard/'),
      )
      .filter((p) => pair.test(readFileSync(join(root, p), 'utf8')));
    expect(offenders).toEqual([]);
  });

  it('gives every code exactly one status, a 4xx or 5xx, and a description', () => {
    for (const [code, { status, description }] of Object.entries(ERROR_CODES)) {
      expect([code, status >= 400 && status <= 599]).toEqual([code, true]);
      expect(description.length).toBeGreaterThan(10);
      expect(code).toMatch(/^[a-z][a-z_]*[a-z]$/);
    }
  });

  it('every factory answers its code with the status of ERROR_CODES', () => {
    const made: AppError[] = [];
    const args = ['message', 'param', 'x'];
    for (const [name, factory] of Object.entries(errors)) {
      const special: Record<string, unknown[]> = {
        fromWire: [{ code: 'model_not_found', message: 'm' }],
        tierNotAllowed: ['Video', ['team']],
        adminNotFound: ['user', 'x'],
        taskRejected: ['invalid_input', 'm'],
        adminConflict: ['key_revoked', 'm'],
        upstreamRejectedRequest: [400, 'm'],
      };
      const e = (factory as (...a: unknown[]) => AppError)(...(special[name] ?? args));
      expect(e).toBeInstanceOf(AppError);
      made.push(e);
    }
    for (const e of made) {
      expect(isErrorCode(e.code)).toBe(true);
      expect([e.code, e.status]).toEqual([e.code, statusOf(e.code)]);
    }
    // The codes that once had two statuses.
    expect(errors.modelNotFound('acme/x').status).toBe(404);
    expect(errors.invalidCredentials().status).toBe(401);
    expect(errors.wrongPassword('current_password')).toMatchObject({ status: 400, code: 'wrong_password' });
    expect(errors.adminNotFound('model', 'acme/x')).toMatchObject({ status: 404, code: 'model_not_found' });
    expect(errors.notAMember('a@example.com', 'ws')).toMatchObject({ status: 404, code: 'not_a_member' });
    expect(errors.upstreamRejectedRequest(400, 'm')).toMatchObject({ status: 400, code: 'upstream_rejected_request' });
    expect(errors.upstreamRejectedRequest(413, 'm')).toMatchObject({ status: 413, code: 'upstream_request_too_large' });
    expect(errors.upstreamRejectedRequest(422, 'm')).toMatchObject({
      status: 422,
      code: 'upstream_unprocessable_request',
    });
  });

  it("makes a worker error again with its code's status, and an unknown code an internal error", () => {
    expect(errors.fromWire({ code: 'model_not_found', message: 'No model', param: 'model' })).toMatchObject({
      status: 404,
      param: 'model',
      expose: true,
    });
    expect(errors.fromWire({ code: 'upstream_timeout', message: 'late' })).toMatchObject({ status: 504, expose: true });
    expect(errors.fromWire({ code: 'internal_error', message: 'boom' })).toMatchObject({ status: 500, expose: false });
    expect(errors.fromWire({ code: 'made_up', message: 'x' })).toMatchObject({
      code: 'internal_error',
      status: 500,
      expose: false,
    });
  });

  it('lists every code a factory can make (no factory code missing from the table)', () => {
    const text = readFileSync(join(__dirname, 'app-error.ts'), 'utf8');
    const factoryPart = text.slice(text.indexOf('export const errors'));
    const literal = [
      ...factoryPart.matchAll(/code: '([a-z_]+)'/g),
      ...factoryPart.matchAll(/make\('([a-z_]+)'\)/g),
    ].map((m) => m[1]!);
    const unknown = literal.filter((c) => !isErrorCode(c));
    expect(unknown).toEqual([]);
    for (const what of ['workspace', 'user', 'key', 'channel', 'model'] as const) {
      const e = errors.adminNotFound(what, 'x');
      expect([e.code, isErrorCode(e.code), e.status]).toEqual([`${what}_not_found`, true, 404]);
    }
  });
});

describe("docs/errors.md's table of codes", () => {
  // After a code is added: UPDATE_DOCS=1 node_modules/.bin/jest libs/errors rewrites the table.
  it('is ERROR_CODES, status by status', () => {
    const file = join(root, 'docs', 'errors.md');
    const markers = /(<!-- error-codes:start -->\n)([\s\S]*?)(\n<!-- error-codes:end -->)/;
    let readme = readFileSync(file, 'utf8');
    if (process.env.UPDATE_DOCS === '1') {
      readme = readme.replace(
        markers,
        (_all, start: string, _table: string, end: string) => `${start}${errorCodesTable()}${end}`,
      );
      writeFileSync(file, readme);
    }
    expect(readme.match(markers)?.[2]).toBe(errorCodesTable());
  });
});
