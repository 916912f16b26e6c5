// Saved projects through the API, against real Postgres, Redis and S3 over a socket: the routes, the files they keep,
// scopes and roles, another workspace's ids, and every limit.
import { MAX_FILES_PER_PROJECT, MAX_PROJECTS_PER_WORKSPACE, newId, plusDays } from '@gensvc/db';
import { jsonOf, makeKey, makeMember, makeWorkspace, sampleMedia as sample, useTestContext } from '@gensvc/testing';
import { startEdge, type EdgeUnderTest } from '../../edge-under-test';
import { bearer, upload } from '../files/files-test-support';

const ctx = useTestContext();
let edge: EdgeUnderTest;

beforeAll(async () => {
  edge = await startEdge(ctx);
});
afterAll(() => edge.close());

interface Caller {
  id: string;
  secret: string;
}

async function workspaceWithKey(): Promise<Caller> {
  const ws = await makeWorkspace(ctx.db);
  const { secret } = await makeKey(ctx.db, ws.id, { scopes: ['files.write'] });
  return { id: ws.id, secret };
}

function call(secret: string, method: string, path: string, body?: unknown) {
  return fetch(`${edge.url}${path}`, {
    method,
    headers: { ...bearer(secret), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

async function ok(res: Response, status = 200) {
  const body = await jsonOf(res);
  expect({ status: res.status, body }).toEqual({ status, body: expect.anything() });
  return body;
}

async function errorOf(res: Response) {
  const body = (await jsonOf(res)) as { error: { code: string; message: string; param: string | null } };
  return { status: res.status, code: body.error.code, message: body.error.message, param: body.error.param };
}

const uploadFile = async (secret: string) => ok(await upload(edge.url, secret, sample.png(8, 8)));

describe('projects', () => {
  let ws: Caller;
  beforeAll(async () => {
    ws = await workspaceWithKey();
  });

  it('creates, lists, reads, renames and deletes a project; deleting it deletes no file', async () => {
    const made = await ok(await call(ws.secret, 'POST', '/api/v1/projects', { name: ' Brand photos ' }), 201);
    expect(made).toEqual({
      id: expect.stringMatching(/^proj_[0-9A-Za-z]{22}$/),
      object: 'project',
      name: 'Brand photos',
      description: '',
      created_by: null,
      created_at: expect.any(String),
      file_count: 0,
    });
    const patched = await ok(await call(ws.secret, 'PATCH', `/api/v1/projects/${made.id}`, { description: 'refs' }));
    expect({ name: patched.name, description: patched.description }).toEqual({
      name: 'Brand photos',
      description: 'refs',
    });

    const file = await uploadFile(ws.secret);
    expect(file.projects).toEqual([]);
    expect(file.expires_at).not.toBeNull();
    const attached = await ok(await call(ws.secret, 'POST', `/api/v1/projects/${made.id}/files`, { file_id: file.id }));
    expect({ id: attached.id, projects: attached.projects, expires_at: attached.expires_at }).toEqual({
      id: file.id,
      projects: [made.id],
      expires_at: null,
    });
    // Again: the same answer, one attachment.
    expect(await ok(await call(ws.secret, 'POST', `/api/v1/projects/${made.id}/files`, { file_id: file.id }))).toEqual({
      ...attached,
      url: expect.any(String),
    });
    expect((await ok(await call(ws.secret, 'GET', `/api/v1/projects/${made.id}`))).file_count).toBe(1);
    const inspected = await ok(await call(ws.secret, 'GET', `/v1/files/${file.id}`));
    expect({ projects: inspected.projects, expires_at: inspected.expires_at }).toEqual({
      projects: [made.id],
      expires_at: null,
    });
    const listed = await ok(await call(ws.secret, 'GET', `/v1/files?project_id=${made.id}`));
    expect(listed.data.map((f: { id: string }) => f.id)).toEqual([file.id]);

    const deleted = await ok(await call(ws.secret, 'DELETE', `/api/v1/projects/${made.id}`));
    expect(deleted).toEqual({ id: made.id, object: 'project', deleted: true });
    expect(await errorOf(await call(ws.secret, 'GET', `/api/v1/projects/${made.id}`))).toMatchObject({
      status: 404,
      code: 'not_found',
    });
    const after = await ok(await call(ws.secret, 'GET', `/v1/files/${file.id}`));
    expect(after.projects).toEqual([]);
    // An upload of today gets its 30 days back.
    expect(after.expires_at).toBe(plusDays(new Date(file.created_at), 30).toISOString());
  });

  it('detaching gives the file its retention back; a file in no project is not detachable', async () => {
    const p = await ok(await call(ws.secret, 'POST', '/api/v1/projects', { name: 'Detach' }), 201);
    const file = await uploadFile(ws.secret);
    await ok(await call(ws.secret, 'POST', `/api/v1/projects/${p.id}/files`, { file_id: file.id }));
    const detached = await ok(await call(ws.secret, 'DELETE', `/api/v1/projects/${p.id}/files/${file.id}`));
    expect({ projects: detached.projects, expires_at: detached.expires_at }).toEqual({
      projects: [],
      expires_at: file.expires_at,
    });
    expect(await errorOf(await call(ws.secret, 'DELETE', `/api/v1/projects/${p.id}/files/${file.id}`))).toEqual({
      status: 404,
      code: 'not_found',
      message: `No file ${file.id} in project ${p.id}.`,
      param: 'file_id',
    });
  });

  it('an attached file can still be deleted: it leaves its projects', async () => {
    const p = await ok(await call(ws.secret, 'POST', '/api/v1/projects', { name: 'Deleted file' }), 201);
    const file = await uploadFile(ws.secret);
    await ok(await call(ws.secret, 'POST', `/api/v1/projects/${p.id}/files`, { file_id: file.id }));
    expect(await ok(await call(ws.secret, 'DELETE', `/v1/files/${file.id}`))).toEqual({
      id: file.id,
      object: 'file',
      deleted: true,
    });
    expect((await ok(await call(ws.secret, 'GET', `/api/v1/projects/${p.id}`))).file_count).toBe(0);
    expect((await ok(await call(ws.secret, 'GET', `/v1/files?project_id=${p.id}`))).data).toEqual([]);
  });

  it('pages with a cursor like files', async () => {
    const own = await workspaceWithKey();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push((await ok(await call(own.secret, 'POST', '/api/v1/projects', { name: `p${i}` }), 201)).id);
    const first = await ok(await call(own.secret, 'GET', '/api/v1/projects?limit=2&order=asc'));
    expect({ ids: first.data.map((p: { id: string }) => p.id), more: first.has_more, last: first.last_id }).toEqual({
      ids: ids.slice(0, 2),
      more: true,
      last: ids[1],
    });
    const rest = await ok(await call(own.secret, 'GET', `/api/v1/projects?limit=10&order=asc&after=${first.last_id}`));
    expect({ ids: rest.data.map((p: { id: string }) => p.id), more: rest.has_more }).toEqual({
      ids: ids.slice(2),
      more: false,
    });
    const newest = await ok(await call(own.secret, 'GET', '/api/v1/projects?limit=1'));
    expect(newest.data[0].id).toBe(ids[4]);
  });
});

describe("another workspace's ids, scopes and roles", () => {
  it("answers 404 for another workspace's project or file, and for unknown ids", async () => {
    const a = await workspaceWithKey();
    const b = await workspaceWithKey();
    const pa = await ok(await call(a.secret, 'POST', '/api/v1/projects', { name: 'A' }), 201);
    const pb = await ok(await call(b.secret, 'POST', '/api/v1/projects', { name: 'B' }), 201);
    const fb = await uploadFile(b.secret);
    await ok(await call(b.secret, 'POST', `/api/v1/projects/${pb.id}/files`, { file_id: fb.id }));
    const notFound = (param: string) => ({ status: 404, code: 'not_found', param });

    for (const [method, path] of [
      ['GET', `/api/v1/projects/${pb.id}`],
      ['PATCH', `/api/v1/projects/${pb.id}`],
      ['DELETE', `/api/v1/projects/${pb.id}`],
      ['POST', `/api/v1/projects/${pb.id}/files`],
      ['DELETE', `/api/v1/projects/${pb.id}/files/${fb.id}`],
      ['GET', `/api/v1/projects/${newId('proj')}`],
      ['GET', '/api/v1/projects/nonsense'],
      ['GET', `/v1/files?project_id=${pb.id}`],
    ] as const) {
      const body = method === 'PATCH' ? { name: 'x' } : method === 'POST' ? { file_id: fb.id } : undefined;
      const res = await call(a.secret, method, path, body);
      expect({ path, ...(await errorOf(res)) }).toMatchObject({ path, ...notFound('project_id') });
    }
    for (const fileId of [fb.id, newId('file'), 'file_nope']) {
      const res = await call(a.secret, 'POST', `/api/v1/projects/${pa.id}/files`, { file_id: fileId });
      expect(await errorOf(res)).toMatchObject(notFound('file_id'));
    }
    // Nothing of b's changed.
    expect((await ok(await call(b.secret, 'GET', `/api/v1/projects/${pb.id}`))).file_count).toBe(1);
  });

  it('needs files.write; a member key attaches and detaches but deletes no project', async () => {
    const ws = await makeWorkspace(ctx.db);
    const { secret: noScope } = await makeKey(ctx.db, ws.id, { scopes: ['tasks.read'] });
    expect(await errorOf(await call(noScope, 'GET', '/api/v1/projects'))).toMatchObject({
      status: 403,
      code: 'insufficient_scope',
    });
    const member = await makeMember(ctx.db, ws.id, 'member');
    const { key, secret } = await makeKey(ctx.db, ws.id, { scopes: ['files.write'] });
    await ctx.db.apiKey.update({ where: { id: key.id }, data: { creatorId: member.user.id, createdVia: 'dashboard' } });
    const p = await ok(await call(secret, 'POST', '/api/v1/projects', { name: 'Mine' }), 201);
    expect(p.created_by).toEqual({ id: member.user.id, email: member.email, name: null });
    const file = await uploadFile(secret);
    await ok(await call(secret, 'POST', `/api/v1/projects/${p.id}/files`, { file_id: file.id }));
    await ok(await call(secret, 'DELETE', `/api/v1/projects/${p.id}/files/${file.id}`));
    expect(await errorOf(await call(secret, 'DELETE', `/api/v1/projects/${p.id}`))).toMatchObject({
      status: 403,
      code: 'insufficient_role',
    });
  });
});

describe('bad input and limits', () => {
  let ws: Caller;
  beforeAll(async () => {
    ws = await workspaceWithKey();
  });

  it('refuses names over 100 characters, empty names, unknown fields and bad cursors, naming the field', async () => {
    const cases: [unknown, string, string][] = [
      [{ name: 'x'.repeat(101) }, 'name', 'name: is longer than the limit of 100 characters'],
      [{ name: '  ' }, 'name', 'name: must not be empty'],
      [{ name: 'a', colour: 'red' }, 'colour', 'colour: is not a field of this request'],
      [{}, 'name', expect.stringContaining('name')],
    ];
    for (const [body, param, message] of cases)
      expect(await errorOf(await call(ws.secret, 'POST', '/api/v1/projects', body))).toEqual({
        status: 400,
        code: 'invalid_request',
        param,
        message,
      });
    expect(
      (await ok(await call(ws.secret, 'POST', '/api/v1/projects', { name: 'x'.repeat(100) }), 201)).name,
    ).toHaveLength(100);
    expect(await errorOf(await call(ws.secret, 'GET', `/api/v1/projects?after=${newId('proj')}`))).toMatchObject({
      status: 400,
      param: 'after',
    });
    expect(await errorOf(await call(ws.secret, 'GET', '/v1/files?project_id=nope'))).toMatchObject({
      status: 400,
      param: 'project_id',
    });
  });

  it(`refuses a project past ${MAX_PROJECTS_PER_WORKSPACE} a workspace (naming the limit) under a race`, async () => {
    const full = await workspaceWithKey();
    await ctx.db.project.createMany({
      data: Array.from({ length: MAX_PROJECTS_PER_WORKSPACE - 1 }, (_, i) => ({
        id: newId('proj'),
        workspaceId: full.id,
        name: `p${i}`,
      })),
    });
    const raced = await Promise.all(
      ['x', 'y', 'z'].map((name) => call(full.secret, 'POST', '/api/v1/projects', { name })),
    );
    expect(raced.map((r) => r.status).sort()).toEqual([201, 400, 400]);
    const refused = await errorOf(raced.find((r) => r.status === 400)!);
    expect(refused).toMatchObject({ code: 'invalid_request' });
    expect(refused.message).toContain('at most 1000 projects (the limit)');
    expect(await ctx.db.project.count({ where: { workspaceId: full.id } })).toBe(MAX_PROJECTS_PER_WORKSPACE);
  });

  it(`refuses a file past ${MAX_FILES_PER_PROJECT} a project, naming the limit, even under a race`, async () => {
    const p = await ok(await call(ws.secret, 'POST', '/api/v1/projects', { name: 'Full' }), 201);
    // One short of full, written in two statements; then two uploads race for the last place.
    await ctx.db.$executeRaw`
      INSERT INTO "File" (id, "workspaceId", source, purpose, filename, "contentType", bytes, "storageKey", "expiresAt")
      SELECT ${p.id} || '_' || i, ${ws.id}, 'upload', 'vision', 'f.png', 'image/png', 1, ${p.id} || '/' || i,
        now() + interval '30 days'
      FROM generate_series(1, ${MAX_FILES_PER_PROJECT - 1}) i`;
    await ctx.db.$executeRaw`
      INSERT INTO "ProjectFile" ("projectId", "fileId")
      SELECT ${p.id}, ${p.id} || '_' || i FROM generate_series(1, ${MAX_FILES_PER_PROJECT - 1}) i`;
    const files = [await uploadFile(ws.secret), await uploadFile(ws.secret)];
    const raced = await Promise.all(
      files.map((f) => call(ws.secret, 'POST', `/api/v1/projects/${p.id}/files`, { file_id: f.id })),
    );
    expect(raced.map((r) => r.status).sort()).toEqual([200, 400]);
    expect(await errorOf(raced.find((r) => r.status === 400)!)).toEqual({
      status: 400,
      code: 'invalid_request',
      param: 'file_id',
      message: 'A project holds at most 10000 files (the limit); detach one to attach another.',
    });
    expect((await ok(await call(ws.secret, 'GET', `/api/v1/projects/${p.id}`))).file_count).toBe(MAX_FILES_PER_PROJECT);
  });
});
