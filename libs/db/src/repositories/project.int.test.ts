// Saved projects against real Postgres: retention follows attachment, and the limits hold under concurrent requests.
import { makeWorkspace, useTestContext } from '@gensvc/testing';
import { DAY_MS, plusDays } from '../days';
import { newId } from '../ids';
import { fileRepository } from './file.repository';
import { MAX_FILES_PER_PROJECT, MAX_PROJECTS_PER_WORKSPACE, projectRepository } from './project.repository';

const ctx = useTestContext();

async function makeFile(workspaceId: string, o: { ageDays: number; publicDays?: number }) {
  const id = newId('file');
  const createdAt = new Date(Date.now() - o.ageDays * DAY_MS);
  const publicExpiresAt = o.publicDays === undefined ? null : plusDays(createdAt, o.publicDays);
  const library = plusDays(createdAt, 30);
  await fileRepository.create(ctx.db, {
    id,
    workspaceId,
    source: publicExpiresAt ? 'generated' : 'upload',
    purpose: publicExpiresAt ? 'output' : 'vision',
    filename: 'f.png',
    contentType: 'image/png',
    bytes: 1n,
    storageKey: `k/${id}`,
    createdAt,
    expiresAt: publicExpiresAt && publicExpiresAt < library ? publicExpiresAt : library,
    publicExpiresAt,
  });
  return { id, createdAt };
}

async function makeProject(workspaceId: string, name = 'Refs') {
  const made = await projectRepository.create(ctx.db, {
    id: newId('proj'),
    workspaceId,
    name,
    description: '',
    createdById: null,
  });
  if (!made.ok) throw new Error('project not made');
  return made.project;
}

const expiryOf = async (id: string) => (await ctx.db.file.findUnique({ where: { id } }))?.expiresAt;

describe('retention follows attachment', () => {
  it('keeps an attached file past its 30 days, and a release gives it back its retention or 7 days', async () => {
    const ws = await makeWorkspace(ctx.db);
    const p = await makeProject(ws.id);
    const young = await makeFile(ws.id, { ageDays: 10 });
    const old = await makeFile(ws.id, { ageDays: 29 });
    expect(await projectRepository.attach(ctx.db, ws.id, p.id, young.id)).toBe('attached');
    expect(await projectRepository.attach(ctx.db, ws.id, p.id, old.id)).toBe('attached');
    expect(await projectRepository.attach(ctx.db, ws.id, p.id, old.id)).toBe('already_attached');
    expect(await expiryOf(old.id)).toBeNull();

    // Two days later the old file is 31 days old: still listed, never purgeable while attached.
    const later = plusDays(new Date(), 2);
    expect(await fileRepository.get(ctx.db, ws.id, old.id, later)).not.toBeNull();
    expect((await fileRepository.purgeable(ctx.db, plusDays(later, 400), 100)).map((f) => f.id)).toEqual([]);

    expect(await projectRepository.detach(ctx.db, ws.id, p.id, young.id, later)).toBe('detached');
    expect(await expiryOf(young.id)).toEqual(plusDays(young.createdAt, 30));
    expect(await projectRepository.detach(ctx.db, ws.id, p.id, old.id, later)).toBe('detached');
    expect(await expiryOf(old.id)).toEqual(plusDays(later, 7));
    expect(await projectRepository.detach(ctx.db, ws.id, p.id, old.id, later)).toBe('not_attached');
  });

  it('a file held by two projects is kept until the last lets it go; deleting a project deletes no file', async () => {
    const ws = await makeWorkspace(ctx.db);
    const a = await makeProject(ws.id, 'A');
    const b = await makeProject(ws.id, 'B');
    // A Free output: public copy (and library entry) 7 days; now 20 days old.
    const out = await makeFile(ws.id, { ageDays: 20, publicDays: 7 });
    await ctx.db.file.update({ where: { id: out.id }, data: { expiresAt: plusDays(new Date(), 1) } });
    for (const p of [a, b]) expect(await projectRepository.attach(ctx.db, ws.id, p.id, out.id)).toBe('attached');
    expect((await projectRepository.projectsOf(ctx.db, [out.id])).get(out.id)?.sort()).toEqual([a.id, b.id].sort());

    const now = new Date();
    expect(await projectRepository.delete(ctx.db, ws.id, a.id, now)).toBe(true);
    expect(await expiryOf(out.id)).toBeNull();
    expect(await projectRepository.delete(ctx.db, ws.id, b.id, now)).toBe(true);
    expect(await expiryOf(out.id)).toEqual(plusDays(now, 7));
    expect(await projectRepository.delete(ctx.db, ws.id, b.id, now)).toBe(false);
  });

  it("another workspace's project or file, and a hidden file, are not attachable", async () => {
    const ws = await makeWorkspace(ctx.db);
    const other = await makeWorkspace(ctx.db);
    const p = await makeProject(ws.id);
    const foreignProject = await makeProject(other.id);
    const foreign = await makeFile(other.id, { ageDays: 1 });
    const expired = await makeFile(ws.id, { ageDays: 31 });
    const mine = await makeFile(ws.id, { ageDays: 1 });
    expect(await projectRepository.attach(ctx.db, ws.id, p.id, foreign.id)).toBe('no_file');
    expect(await projectRepository.attach(ctx.db, ws.id, p.id, expired.id)).toBe('no_file');
    expect(await projectRepository.attach(ctx.db, ws.id, foreignProject.id, mine.id)).toBe('no_project');
    expect(await projectRepository.get(ctx.db, ws.id, foreignProject.id)).toBeNull();
    expect(await projectRepository.detach(ctx.db, ws.id, foreignProject.id, mine.id)).toBe('no_project');
  });
});

describe('limits hold under concurrency', () => {
  it(`${MAX_FILES_PER_PROJECT} files per project: of two attaches racing for the last place, one wins`, async () => {
    const ws = await makeWorkspace(ctx.db);
    const p = await makeProject(ws.id);
    // The project one short of full, written in two statements.
    const n = MAX_FILES_PER_PROJECT + 1;
    await ctx.db.$executeRaw`
      INSERT INTO "File" (id, "workspaceId", source, purpose, filename, "contentType", bytes, "storageKey", "expiresAt")
      SELECT ${p.id} || '_' || i, ${ws.id}, 'upload', 'vision', 'f.png', 'image/png', 1, ${p.id} || '/' || i,
        now() + interval '30 days'
      FROM generate_series(1, ${n}) i`;
    await ctx.db.$executeRaw`
      INSERT INTO "ProjectFile" ("projectId", "fileId")
      SELECT ${p.id}, ${p.id} || '_' || i FROM generate_series(1, ${n - 2}) i`;
    const ids = Array.from({ length: n }, (_, i) => `${p.id}_${i + 1}`);
    const last = ids.slice(MAX_FILES_PER_PROJECT - 1);
    const results = await Promise.all(last.map((id) => projectRepository.attach(ctx.db, ws.id, p.id, id)));
    expect(results.sort()).toEqual(['attached', 'project_full']);
    expect(await ctx.db.projectFile.count({ where: { projectId: p.id } })).toBe(MAX_FILES_PER_PROJECT);
  });

  it(`${MAX_PROJECTS_PER_WORKSPACE} projects per workspace: two racing for the last place, one wins`, async () => {
    const ws = await makeWorkspace(ctx.db);
    await ctx.db.project.createMany({
      data: Array.from({ length: MAX_PROJECTS_PER_WORKSPACE - 1 }, (_, i) => ({
        id: newId('proj'),
        workspaceId: ws.id,
        name: `p${i}`,
      })),
    });
    const made = await Promise.all(
      ['x', 'y'].map((name) =>
        projectRepository.create(ctx.db, {
          id: newId('proj'),
          workspaceId: ws.id,
          name,
          description: '',
          createdById: null,
        }),
      ),
    );
    expect(made.map((m) => m.ok).sort()).toEqual([false, true]);
    expect(await ctx.db.project.count({ where: { workspaceId: ws.id } })).toBe(MAX_PROJECTS_PER_WORKSPACE);
  });
});
