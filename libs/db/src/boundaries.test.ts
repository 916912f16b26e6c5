// Who may touch what, checked on the sources so that a newcomer's shortcut fails here, not in review:
//  - only libs/db writes Task rows (taskRepository is their one writer) and only libs/db talks to Prisma: no other
//    file imports the Prisma client, runs raw SQL or calls a Prisma model delegate;
//  - only libs/queue makes jobs: every other file goes through its named producers (libs/queue/src/producers.ts).
// Tests and their support files, libs/testing (fixtures that set rows up) and the browser test's seed are outside
// the rules.
// The types say most of it first (typeBoundary below, checked by npm run typecheck): outside libs/db a Db or Tx
// handle has no query method and the Prisma namespace is not exported, so the rules on sources remain for what a
// type cannot stop: an import of the client itself or of the test-only entry.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import * as db from './index';

const ROOT = join(__dirname, '..', '..', '..');

/** Production sources: every .ts under services/*\/src and libs/*\/src but tests, fixtures and generated code. */
function sources(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) {
        if (!['node_modules', 'dist', 'generated', 'e2e'].includes(e.name)) walk(p);
      } else if (e.name.endsWith('.ts') && !/(\.test|-test-support|\.d)\.ts$/.test(e.name)) out.push(relative(ROOT, p));
    }
  };
  for (const top of ['services', 'libs']) {
    for (const pkg of readdirSync(join(ROOT, top), { withFileTypes: true })) {
      if (pkg.isDirectory() && !(top === 'libs' && pkg.name === 'testing')) walk(join(ROOT, top, pkg.name, 'src'));
    }
  }
  return out;
}

const DELEGATE_METHODS = [
  'findUnique',
  'findUniqueOrThrow',
  'findFirst',
  'findFirstOrThrow',
  'findMany',
  'create',
  'createMany',
  'createManyAndReturn',
  'update',
  'updateMany',
  'upsert',
  'delete',
  'deleteMany',
  'count',
  'aggregate',
  'groupBy',
].join('|');
const DELEGATE_CALL = new RegExp(
  String.raw`\b(?:db|tx|this\.db|deps\.db|ctx\.db)\s*\.\s*([a-z]\w*)\s*\.\s*(?:${DELEGATE_METHODS})\s*\(`,
  'g',
);

interface Rule {
  name: string;
  /** Files the rule does not apply to (path prefixes). */
  outside: string[];
  find(source: string): string[];
}

const matches = (re: RegExp) => (source: string) => [...source.matchAll(re)].map((m) => m[0]);

export const RULES: Rule[] = [
  {
    name: 'writes a Task row outside libs/db (taskRepository is the only writer)',
    outside: ['libs/db/'],
    find: (s) => [
      ...matches(/\.\s*task\s*\.\s*(?:create|createMany|update|updateMany|upsert|delete|deleteMany)\s*\(/g)(s),
      ...matches(/\b(?:UPDATE|INSERT\s+INTO|DELETE\s+FROM)\s+"Task"/gi)(s),
    ],
  },
  {
    name: 'imports the Prisma client outside libs/db',
    outside: ['libs/db/'],
    find: matches(
      /from\s+['"](?:@prisma\/client|@prisma\/adapter-pg|[^'"]*generated\/prisma[^'"]*)['"]|\bPrismaClient\b/g,
    ),
  },
  {
    name: 'runs raw SQL or a Prisma transaction outside libs/db',
    outside: ['libs/db/'],
    find: matches(/\$(?:queryRaw|queryRawUnsafe|executeRaw|executeRawUnsafe|transaction)\b/g),
  },
  {
    name: 'calls a Prisma model delegate outside libs/db (use its repository)',
    outside: ['libs/db/'],
    find: matches(DELEGATE_CALL),
  },
  {
    name: 'imports the test-only entry @gensvc/db/testing (the Prisma client under a handle) outside tests',
    outside: [],
    find: matches(/from\s+['"]@gensvc\/db\/testing['"]|import\(\s*['"]@gensvc\/db\/testing['"]/g),
  },
  {
    name:
      'makes a job outside libs/queue (use a named producer: scheduleSubmit, schedulePoll, scheduleArchive, ' +
      'scheduleCallback, scheduleCancel, scheduleEvaluate)',
    outside: ['libs/queue/'],
    find: matches(/\b(?:enqueue|ensureJob)\s*\(|\.\s*add\s*\(\s*[A-Z]\w*\.name\b/g),
  },
];

describe('boundaries', () => {
  const files = sources().map((path) => ({ path, text: readFileSync(join(ROOT, path), 'utf8') }));

  it('finds the sources it checks (a broken walk would pass vacuously)', () => {
    const paths = files.map((f) => f.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        'libs/db/src/repositories/task.repository.ts',
        'services/archiver/src/handlers/archive-output.ts',
        'services/edge/src/routes/images/record-edit.ts',
      ]),
    );
    expect(paths.length).toBeGreaterThan(200);
  });

  it.each(RULES.map((r) => [r.name, r] as const))('no file %s', (_name, rule) => {
    const offenders = files
      .filter((f) => !rule.outside.some((o) => f.path.startsWith(o)))
      .flatMap((f) => rule.find(f.text).map((hit) => `${f.path}: ${hit}`));
    expect(offenders).toEqual([]);
  });

  it('each rule catches what it forbids (the rules themselves can fail)', () => {
    const bad = [
      'await tx.task.create({ data })',
      'await db.$executeRaw`UPDATE "Task" SET output = x`',
      "import { PrismaClient } from '../generated/prisma/client';",
      'await db.$queryRaw`SELECT 1`',
      'const f = await deps.db.file.findUnique({ where: { id } });',
      'await enqueue(queues, ArchiveOutput, payload);',
      "import { createTestDb } from '@gensvc/db/testing';",
    ];
    for (const rule of RULES) expect(bad.filter((b) => rule.find(b).length > 0)).not.toEqual([]);
    expect(RULES[0]!.find(bad[1]!)).toHaveLength(1);
    expect(RULES[4]!.find('await scheduleArchive(queues, ref, 0);')).toEqual([]);
  });
});

/**
 * What a service can do with a handle, as tsc sees it from @gensvc/db (never called: each @ts-expect-error line
 * must fail to compile, or npm run typecheck fails on the unused directive).
 */
export async function typeBoundary(handle: db.Db, id: string): Promise<void> {
  // @ts-expect-error a Db has no model delegate
  await handle.task.findUnique({ where: { id } });
  // @ts-expect-error nor raw SQL
  await handle.$queryRaw`SELECT 1`;
  // @ts-expect-error nor Prisma's transaction
  await handle.$transaction([]);
  await db.withTx(handle, async (tx) => {
    // @ts-expect-error a Tx neither
    await tx.task.update({ where: { id }, data: {} });
    // @ts-expect-error a Tx is not a Db (as a Prisma transaction client is not a client)
    await db.pingDb(tx);
    await db.taskRepository.find(tx, id);
  });
  // @ts-expect-error a repository answers a plain Promise, without Prisma's fluent queries on it
  await db.taskRepository.find(handle, id).workspace();
  // @ts-expect-error the Prisma namespace is not exported
  void db.Prisma;
}
