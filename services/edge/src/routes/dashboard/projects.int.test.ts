// Saved projects through the dashboard's JSON routes, over real sockets against real Postgres, Redis and S3: members
// create projects and attach and detach files, only admins and owners delete a project, and the outputs library shows
// when each file goes.
import { makeMember, makeOutput, makeWorkspace, useTestContext } from '@gensvc/testing';
import { startEdge, type EdgeUnderTest } from '../../edge-under-test';
import { DashboardClient } from './dashboard-test-support';

const ctx = useTestContext();
let edge: EdgeUnderTest;

beforeAll(async () => {
  edge = await startEdge(ctx);
});
afterAll(() => edge.close());

async function signedIn(role: 'owner' | 'admin' | 'member', workspaceId: string) {
  const person = await makeMember(ctx.db, workspaceId, role);
  const c = new DashboardClient(edge.url);
  expect((await c.signIn(person.email, person.password)).status).toBe(200);
  return { ...person, c };
}

it('members make projects and attach and detach outputs; only admins and owners delete a project', async () => {
  const ws = await makeWorkspace(ctx.db, { name: 'Studio' });
  const base = `/api/v1/dashboard/workspaces/${ws.id}`;
  const member = await signedIn('member', ws.id);
  const admin = await signedIn('admin', ws.id);
  const { file } = await makeOutput(ctx, ws.id);

  const made = await member.c.post(`${base}/projects`, { name: 'Lighthouses', description: 'dawn shots' });
  expect(made.status).toBe(201);
  expect(made.body.created_by).toEqual({ id: member.user.id, email: member.email, name: null });
  const project = `${base}/projects/${made.body.id}`;

  const before = await member.c.get(`${base}/outputs`);
  expect(before.body.data.map((o: { id: string; projects: string[] }) => [o.id, o.projects])).toEqual([[file.id, []]]);
  expect(before.body.data[0].expires_at).toBe(file.expiresAt!.toISOString());

  const attached = await member.c.post(`${project}/files`, { file_id: file.id });
  expect({ status: attached.status, expires_at: attached.body.expires_at }).toEqual({ status: 200, expires_at: null });
  const grid = await member.c.get(`${project}/files`);
  expect(grid.body).toEqual({
    data: [
      expect.objectContaining({
        id: file.id,
        kind: 'image',
        preview_url: expect.stringMatching(/^\/api\/v1\/files\/file_\w+\/content\?token=/),
        expires_at: null,
        projects: [made.body.id],
      }),
    ],
    has_more: false,
    next_cursor: null,
  });
  expect((await member.c.get(`${base}/projects`)).body.data.map((p: { file_count: number }) => p.file_count)).toEqual([
    1,
  ]);
  expect((await member.c.get(`${base}`)).body.permissions.delete_projects).toBe(false);
  expect((await admin.c.get(`${base}`)).body.permissions.delete_projects).toBe(true);

  const detached = await member.c.delete(`${project}/files/${file.id}`);
  expect({ status: detached.status, expires_at: detached.body.expires_at }).toEqual({
    status: 200,
    expires_at: file.expiresAt!.toISOString(),
  });
  await member.c.post(`${project}/files`, { file_id: file.id });

  const refused = await member.c.delete(project);
  expect({ status: refused.status, code: refused.body.error.code }).toEqual({ status: 403, code: 'insufficient_role' });
  expect((await admin.c.delete(project)).status).toBe(200);
  // The file stays, its retention running again.
  const after = await member.c.get(`${base}/outputs`);
  expect(after.body.data.map((o: { id: string; projects: string[] }) => [o.id, o.projects])).toEqual([[file.id, []]]);
});

it("another workspace's project is 404, and a change without the CSRF token is refused", async () => {
  const mine = await makeWorkspace(ctx.db);
  const theirs = await makeWorkspace(ctx.db);
  const me = await signedIn('owner', mine.id);
  const them = await signedIn('owner', theirs.id);
  const p = await them.c.post(`/api/v1/dashboard/workspaces/${theirs.id}/projects`, { name: 'Theirs' });
  expect(p.status).toBe(201);
  // Through my own workspace's path: no such project there.
  const foreign = await me.c.get(`/api/v1/dashboard/workspaces/${mine.id}/projects/${p.body.id}/files`);
  expect({ status: foreign.status, code: foreign.body.error.code }).toEqual({ status: 404, code: 'not_found' });
  const forged = await me.c.request(
    'POST',
    `/api/v1/dashboard/workspaces/${mine.id}/projects`,
    { name: 'x' },
    {
      'x-csrf-token': 'forged',
    },
  );
  expect({ status: forged.status, code: forged.body.error.code }).toEqual({ status: 403, code: 'csrf_failed' });
});
