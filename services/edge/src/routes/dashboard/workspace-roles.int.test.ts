// Keys, members, invitations, outputs, tasks and usage through the dashboard's JSON routes, and the roles that bound
// them — in the dashboard and in the API (a key is bounded by its creator's role) — over real sockets against real
// Postgres, Redis and S3.
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { billingRepository, fileRepository, newId } from '@gensvc/db';
import { createS3 } from '@gensvc/storage';
import {
  awaitMail,
  deleteKeys,
  eventually,
  linkIn,
  makeKey,
  makeMember,
  makeOutput,
  makeWorkspace,
  startMailSender,
  useTestContext,
  type ServiceProcess,
} from '@gensvc/testing';
import { cliFor } from '../../../../admin-cli/src/cli-under-test';
import { startEdge, type EdgeUnderTest } from '../../edge-under-test';
import { DashboardClient } from './dashboard-test-support';

const ctx = useTestContext();
let edge: EdgeUnderTest;
let mailSender: ServiceProcess;

beforeAll(async () => {
  [edge, mailSender] = await Promise.all([startEdge(ctx), startMailSender(ctx)]);
}, 120_000);
afterAll(async () => {
  await edge.close();
  await mailSender.stop();
});
beforeEach(() => deleteKeys(ctx.redis, `${ctx.config.queuePrefix}:login:*`));

async function signedIn(email: string, password: string) {
  const c = new DashboardClient(edge.url);
  const res = await c.signIn(email, password);
  expect(res.status).toBe(200);
  return c;
}

/** A workspace with an owner, an admin and a member, each signed in. */
async function team() {
  const ws = await makeWorkspace(ctx.db, { name: 'Team' });
  const [owner, admin, member] = await Promise.all([
    makeMember(ctx.db, ws.id, 'owner'),
    makeMember(ctx.db, ws.id, 'admin'),
    makeMember(ctx.db, ws.id, 'member'),
  ]);
  const [o, a, m] = await Promise.all([
    signedIn(owner.email, owner.password),
    signedIn(admin.email, admin.password),
    signedIn(member.email, member.password),
  ]);
  const base = `/api/v1/dashboard/workspaces/${ws.id}`;
  return { ws, base, owner: { ...owner, c: o }, admin: { ...admin, c: a }, member: { ...member, c: m } };
}

const balanceWith = (secret: string) =>
  fetch(`${edge.url}/api/v1/me/balance`, { headers: { authorization: `Bearer ${secret}` } });

describe('API keys', () => {
  it('creates a key whose secret is shown once and works, rotates it with a grace period, and revokes it', async () => {
    const t = await team();
    const made = await t.owner.c.post(`${t.base}/keys`, {
      name: 'ci',
      scopes: ['account.read'],
      spend_cap: 2.5,
      expires_at: new Date(Date.now() + 86_400_000).toISOString(),
    });
    expect(made.status).toBe(201);
    const { key, secret } = made.body;
    expect(secret).toMatch(/^gsk_/);
    expect(key).toMatchObject({
      name: 'ci',
      scopes: ['account.read'],
      spend_cap: 2.5,
      spent: 0,
      status: 'active',
      creator: { email: t.owner.email },
    });
    expect(secret.startsWith(key.prefix)).toBe(true);
    // Shown once: the list never carries a secret.
    const list = await t.owner.c.get(`${t.base}/keys`);
    expect(JSON.stringify(list.body)).not.toContain(secret);
    expect(list.body.data.map((k: { id: string }) => k.id)).toContain(key.id);

    const balance = await balanceWith(secret);
    expect(balance.status).toBe(200);
    expect(((await balance.json()) as { key: unknown }).key).toEqual({ spend_cap: 2.5, spent: 0 });

    const rotated = await t.owner.c.post(`${t.base}/keys/${key.id}/rotate`, { grace_seconds: 3600 });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(secret);
    expect(rotated.body.key.previous_expires_at).not.toBeNull();
    expect((await balanceWith(secret)).status).toBe(200); // in its grace period
    expect((await balanceWith(rotated.body.secret)).status).toBe(200);

    const revoked = await t.owner.c.post(`${t.base}/keys/${key.id}/revoke`);
    expect(revoked.status).toBe(200);
    expect(revoked.body.key.status).toBe('revoked');
    await eventually(
      async () => (await balanceWith(rotated.body.secret)).status === 401,
      'the revoked key refused',
      1000,
    );
    expect((await balanceWith(secret)).status).toBe(401);
  });

  it('lets a member see and manage only their own keys', async () => {
    const t = await team();
    const adminKey = (await t.admin.c.post(`${t.base}/keys`, { name: 'admin key', scopes: ['account.read'] })).body.key;
    const memberKey = (await t.member.c.post(`${t.base}/keys`, { name: 'member key', scopes: ['account.read'] })).body
      .key;
    const mine = await t.member.c.get(`${t.base}/keys`);
    expect(mine.body.data.map((k: { id: string }) => k.id)).toEqual([memberKey.id]);
    const all = await t.admin.c.get(`${t.base}/keys`);
    expect(all.body.data.map((k: { id: string }) => k.id).sort()).toEqual([adminKey.id, memberKey.id].sort());

    const refused = await t.member.c.post(`${t.base}/keys/${adminKey.id}/revoke`);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ code: 'insufficient_role', param: 'admin' });
    expect((await t.member.c.post(`${t.base}/keys/${memberKey.id}/revoke`)).status).toBe(200);
    expect((await t.admin.c.post(`${t.base}/keys/${adminKey.id}/rotate`, { grace_seconds: 0 })).status).toBe(200);
  });

  it("lets an admin revoke another's key but not rotate it; its creator rotates it, a CLI key an owner", async () => {
    const t = await team();
    const made = await t.member.c.post(`${t.base}/keys`, { name: 'member key', scopes: ['account.read'] });
    const { key, secret } = made.body;
    const { key: cliKey } = await makeKey(ctx.db, t.ws.id, { name: 'platform' });
    const row = (id: string) => ctx.db.apiKey.findUniqueOrThrow({ where: { id } });
    const before = await row(key.id);

    const seen = (await t.admin.c.get(`${t.base}/keys`)).body.data;
    expect(seen.find((k: { id: string }) => k.id === key.id)).toMatchObject({
      created_via: 'dashboard',
      creator: { id: t.member.user.id, email: t.member.email },
      can_rotate: false,
      can_revoke: true,
    });
    expect(seen.find((k: { id: string }) => k.id === cliKey.id)).toMatchObject({
      created_via: 'cli',
      creator: null,
      can_rotate: false,
      can_revoke: true,
    });
    const ownerView = (await t.owner.c.get(`${t.base}/keys`)).body.data;
    expect(ownerView.find((k: { id: string }) => k.id === key.id)).toMatchObject({ can_rotate: false });
    expect(ownerView.find((k: { id: string }) => k.id === cliKey.id)).toMatchObject({ can_rotate: true });

    // Neither an admin nor an owner receives another person's new secret: refused, and the key is as it was.
    for (const who of [t.admin, t.owner]) {
      const refused = await who.c.post(`${t.base}/keys/${key.id}/rotate`, { grace_seconds: 0 });
      expect(refused.status).toBe(403);
      expect(refused.body.error).toMatchObject({ type: 'permission_error', code: 'not_key_creator' });
      expect(refused.body.secret).toBeUndefined();
    }
    expect(await row(key.id)).toEqual(before);
    expect((await balanceWith(secret)).status).toBe(200);
    const member = await t.member.c.post(`${t.base}/keys/${key.id}/rotate`, { grace_seconds: 0 });
    expect(member.status).toBe(200);
    expect(member.body.key).toMatchObject({ can_rotate: true, can_revoke: true });

    // A key the CLI made without a creator: owners only.
    const cliRefused = await t.admin.c.post(`${t.base}/keys/${cliKey.id}/rotate`, { grace_seconds: 0 });
    expect(cliRefused.status).toBe(403);
    expect(cliRefused.body.error).toMatchObject({ code: 'insufficient_role', param: 'owner' });
    expect((await row(cliKey.id)).hash).toBe(cliKey.hash);
    expect((await t.owner.c.post(`${t.base}/keys/${cliKey.id}/rotate`, { grace_seconds: 0 })).status).toBe(200);

    const revoked = await t.admin.c.post(`${t.base}/keys/${key.id}/revoke`);
    expect(revoked.status).toBe(200);
    expect(revoked.body.key).toMatchObject({ status: 'revoked', can_rotate: false, can_revoke: false });
    await eventually(
      async () => (await balanceWith(member.body.secret)).status === 401,
      'the revoked key refused',
      1000,
    );
  });

  it('stops the keys of a deleted user on every replica at once; they never read as made by the CLI', async () => {
    const t = await team();
    const second = await startEdge(ctx);
    try {
      const made = await t.member.c.post(`${t.base}/keys`, { name: 'leaver', scopes: ['account.read'] });
      const { key, secret } = made.body;
      const on = (url: string) => fetch(`${url}/api/v1/me/balance`, { headers: { authorization: `Bearer ${secret}` } });
      // Both replicas hold the key's look-up in their caches.
      for (const url of [edge.url, second.url]) for (let i = 0; i < 2; i++) expect((await on(url)).status).toBe(200);

      const { ok } = cliFor(ctx);
      const deleted = await ok(['user', 'delete', '--email', t.member.email]);
      expect(deleted).toEqual({ id: t.member.user.id, email: t.member.email, deleted: true, keys_stopped: [key.id] });
      for (const url of [edge.url, second.url]) {
        await eventually(
          async () => {
            const res = await on(url);
            return (
              res.status === 401 &&
              ((await res.json()) as { error: { code: string } }).error.code === 'key_creator_left'
            );
          },
          "the deleted user's key refused",
          1000,
        );
      }
      const listed = (await t.owner.c.get(`${t.base}/keys`)).body.data.find((k: { id: string }) => k.id === key.id);
      expect(listed).toMatchObject({ created_via: 'dashboard', creator: null, can_rotate: false, can_revoke: true });
      expect(await ctx.db.apiKey.findUniqueOrThrow({ where: { id: key.id } })).toMatchObject({
        creatorId: null,
        createdVia: 'dashboard',
        revokedAt: null,
      });

      const last = await cliFor(ctx).cliJson(['user', 'delete', '--email', t.owner.email]);
      expect(last.code).toBe(1);
      expect(last.body.error.code).toBe('last_owner');
      expect(await ctx.db.user.count({ where: { id: t.owner.user.id } })).toBe(1);
    } finally {
      await second.close();
    }
  });

  it("never reaches another workspace's key, and validates what it is sent", async () => {
    const t = await team();
    const other = await makeWorkspace(ctx.db);
    const { key } = await makeKey(ctx.db, other.id);
    expect((await t.owner.c.post(`${t.base}/keys/${key.id}/revoke`)).status).toBe(404);
    expect((await ctx.db.apiKey.findUniqueOrThrow({ where: { id: key.id } })).revokedAt).toBeNull();

    const cases: [unknown, string][] = [
      [{ name: 'x'.repeat(10_000), scopes: ['account.read'] }, 'name'],
      [{ name: 'k', scopes: [] }, 'scopes'],
      [{ name: 'k', scopes: ['root'] }, 'scopes.0'],
      [{ name: 'k', scopes: ['account.read'], spend_cap: -1 }, 'spend_cap'],
      [{ name: 'k', scopes: ['account.read'], spend_cap: 0.0000001 }, 'spend_cap'],
      [{ name: 'k', scopes: ['account.read'], expires_at: '2001-01-01T00:00:00Z' }, 'expires_at'],
      [{ name: 'k', scopes: ['account.read'], expires_at: 'tomorrow' }, 'expires_at'],
    ];
    for (const [body, param] of cases) {
      const res = await t.owner.c.post(`${t.base}/keys`, body);
      expect(res.status).toBe(400);
      expect(res.body.error.param).toBe(param);
    }
    expect(await ctx.db.apiKey.count({ where: { workspaceId: t.ws.id } })).toBe(0);
    const html = await t.owner.c.post(`${t.base}/keys`, {
      name: '<img src=x onerror=alert(1)>',
      scopes: ['account.read'],
    });
    expect(html.status).toBe(201);
    expect(html.body.key.name).toBe('<img src=x onerror=alert(1)>');
  });
});

describe('members', () => {
  it('invites an existing user, who joins by accepting signed in as that address; then roles and removal', async () => {
    const t = await team();
    const other = await makeMember(ctx.db, (await makeWorkspace(ctx.db)).id, 'owner');
    const invited = await t.admin.c.post(`${t.base}/members`, { email: other.email.toUpperCase(), role: 'member' });
    expect(invited.status).toBe(201);
    // Not a member yet, and nothing in the answer says the address has an account: the same fields as for a stranger.
    expect(invited.body).toEqual({ invitation: expect.objectContaining({ email: other.email, status: 'sent' }) });
    const stranger = await t.admin.c.post(`${t.base}/members`, {
      email: `nobody-${Date.now()}@example.com`,
      role: 'member',
    });
    expect(Object.keys(stranger.body.invitation).sort()).toEqual(Object.keys(invited.body.invitation).sort());
    expect(JSON.stringify(invited.body)).not.toContain(other.user.id);
    expect(await ctx.db.membership.count({ where: { workspaceId: t.ws.id, userId: other.user.id } })).toBe(0);

    const token = linkIn(await awaitMail(other.email), `${ctx.config.publicBaseUrl}/dashboard/invite/`)
      .split('/')
      .pop()!;
    // Not signed in, or signed in as someone else: refused, and nothing changes.
    const anon = new DashboardClient(edge.url);
    await anon.get('/api/v1/dashboard/session');
    expect((await anon.post(`/api/v1/dashboard/invitations/${token}/accept`, {})).status).toBe(401);
    expect((await t.member.c.post(`/api/v1/dashboard/invitations/${token}/accept`, {})).status).toBe(401);
    // Nor can a password make a second account for the address.
    const again = await anon.post(`/api/v1/dashboard/invitations/${token}/accept`, { password: 'a long new password' });
    expect(again.status).toBe(401);
    expect(await ctx.db.membership.count({ where: { workspaceId: t.ws.id, userId: other.user.id } })).toBe(0);
    const asOther = await signedIn(other.email, other.password);
    const joined = await asOther.post(`/api/v1/dashboard/invitations/${token}/accept`, {});
    expect(joined.status).toBe(200);
    expect(joined.body.workspaces).toContainEqual({ id: t.ws.id, name: 'Team', tier: 'payg', role: 'member' });
    expect((await t.admin.c.post(`${t.base}/members`, { email: other.email, role: 'member' })).status).toBe(409);

    // Admins manage members and admins, never owners.
    const makeOwner = await t.admin.c.patch(`${t.base}/members/${other.user.id}`, { role: 'owner' });
    expect(makeOwner.status).toBe(403);
    expect(makeOwner.body.error).toMatchObject({ code: 'insufficient_role', param: 'owner' });
    expect((await t.admin.c.patch(`${t.base}/members/${t.owner.user.id}`, { role: 'member' })).status).toBe(403);
    expect((await t.admin.c.patch(`${t.base}/members/${other.user.id}`, { role: 'admin' })).status).toBe(200);
    // Members manage nobody.
    const byMember = await t.member.c.patch(`${t.base}/members/${other.user.id}`, { role: 'member' });
    expect(byMember.status).toBe(403);
    expect((await t.member.c.post(`${t.base}/members`, { email: 'x@example.com', role: 'member' })).status).toBe(403);
    expect((await t.member.c.delete(`${t.base}/members/${other.user.id}`)).status).toBe(403);

    expect((await t.owner.c.patch(`${t.base}/members/${other.user.id}`, { role: 'owner' })).status).toBe(200);
    const list = await t.member.c.get(`${t.base}/members`);
    expect(list.body.data.filter((m: { role: string }) => m.role === 'owner')).toHaveLength(2);
    expect(list.body.invitations).toEqual([]);
    expect((await t.admin.c.delete(`${t.base}/members/${other.user.id}`)).status).toBe(403);
    expect((await t.owner.c.delete(`${t.base}/members/${other.user.id}`)).status).toBe(204);
    // A member may leave.
    expect((await t.member.c.delete(`${t.base}/members/${t.member.user.id}`)).status).toBe(204);
    expect((await t.member.c.get(t.base)).status).toBe(404);
  });

  it('keeps the last owner: neither demoted nor removed, even by two owners racing', async () => {
    const t = await team();
    const lone = await t.owner.c.patch(`${t.base}/members/${t.owner.user.id}`, { role: 'admin' });
    expect(lone.status).toBe(409);
    expect(lone.body.error.code).toBe('last_owner');
    expect((await t.owner.c.delete(`${t.base}/members/${t.owner.user.id}`)).status).toBe(409);

    const second = await makeMember(ctx.db, t.ws.id, 'owner');
    const c2 = await signedIn(second.email, second.password);
    // Each demotes the other at once, ten times over: the lock on the workspace lets exactly one through each time.
    // The other is refused as the last owner (409), or as no longer an owner (403) when its role was read after the
    // first change: its own role is checked again under the lock.
    for (let round = 0; round < 10; round++) {
      await ctx.db.membership.updateMany({
        where: { workspaceId: t.ws.id, userId: { in: [t.owner.user.id, second.user.id] } },
        data: { role: 'owner' },
      });
      const [a, b] = await Promise.all([
        t.owner.c.patch(`${t.base}/members/${second.user.id}`, { role: 'member' }),
        c2.patch(`${t.base}/members/${t.owner.user.id}`, { role: 'member' }),
      ]);
      expect([a.status, b.status].filter((s) => s === 200)).toHaveLength(1);
      expect([a.status, b.status].every((s) => s === 200 || s === 409 || s === 403)).toBe(true);
      expect(await ctx.db.membership.count({ where: { workspaceId: t.ws.id, role: 'owner' } })).toBe(1);
    }
  });

  it('invites a new person by a mailed link that sets their password, once', async () => {
    const t = await team();
    const inv = await t.admin.c.post(`${t.base}/members`, { email: 'New.Person@example.com', role: 'member' });
    expect(inv.status).toBe(201);
    // The link goes to the address only, never back to the inviter.
    expect(inv.body.invitation).not.toHaveProperty('url');
    expect(inv.body.invitation).toMatchObject({ email: 'new.person@example.com', role: 'member', status: 'sent' });
    const mail = await awaitMail('new.person@example.com');
    expect(mail.subject).toBe('You are invited to "Team" on gensvc');
    const url = linkIn(mail, `${ctx.config.publicBaseUrl}/dashboard/invite/`);
    expect(url).toMatch(new RegExp(`^${ctx.config.publicBaseUrl}/dashboard/invite/[A-Za-z0-9_-]{43}$`));
    const token = url.split('/').pop()!;
    expect(JSON.stringify(inv.body)).not.toContain(token);
    expect((await t.member.c.get(`${t.base}/members`)).body.invitations).toEqual([]);
    const listed = (await t.admin.c.get(`${t.base}/members`)).body.invitations;
    expect(listed).toHaveLength(1);
    expect(JSON.stringify(listed)).not.toContain(token);

    const guest = new DashboardClient(edge.url);
    await guest.get('/api/v1/dashboard/session'); // the page loads: the sign-in CSRF cookie
    const seen = await guest.get(`/api/v1/dashboard/invitations/${token}`);
    expect(seen.body).toMatchObject({
      email: 'new.person@example.com',
      role: 'member',
      workspace: { id: t.ws.id, name: 'Team' },
      user_exists: false,
    });
    expect((await guest.post(`/api/v1/dashboard/invitations/${token}/accept`, { password: 'short' })).status).toBe(400);
    const accepted = await guest.post(`/api/v1/dashboard/invitations/${token}/accept`, {
      password: 'a long new password',
      name: 'New',
    });
    expect(accepted.status).toBe(201);
    expect(accepted.body.workspaces).toEqual([{ id: t.ws.id, name: 'Team', tier: 'payg', role: 'member' }]);
    expect((await guest.get(`${t.base}/outputs`)).status).toBe(200);
    expect((await new DashboardClient(edge.url).get(`/api/v1/dashboard/invitations/${token}`)).status).toBe(404);
    expect((await new DashboardClient(edge.url).signIn('new.person@example.com', 'a long new password')).status).toBe(
      200,
    );

    const withdrawn = await t.admin.c.post(`${t.base}/members`, { email: 'later@example.com', role: 'admin' });
    const laterToken = linkIn(await awaitMail('later@example.com'), ctx.config.publicBaseUrl)
      .split('/')
      .pop()!;
    expect((await t.member.c.delete(`${t.base}/invitations/${withdrawn.body.invitation.id}`)).status).toBe(403);
    expect((await t.admin.c.delete(`${t.base}/invitations/${withdrawn.body.invitation.id}`)).status).toBe(204);
    expect((await guest.get(`/api/v1/dashboard/invitations/${laterToken}`)).status).toBe(404);
  });

  it('resends an invitation with a new link: the last one stops working', async () => {
    const t = await team();
    const to = `resend-${Date.now()}@example.com`;
    const inv = (await t.admin.c.post(`${t.base}/members`, { email: to, role: 'member' })).body.invitation;
    const first = linkIn(await awaitMail(to), ctx.config.publicBaseUrl)
      .split('/')
      .pop()!;
    const resend = `${t.base}/invitations/${inv.id}/resend`;
    expect((await t.member.c.post(resend)).status).toBe(403);
    const resent = await t.admin.c.post(resend);
    expect(resent.status).toBe(200);
    expect(resent.body.invitation).toMatchObject({ id: inv.id, email: to, sends: 2, status: 'sent' });
    const second = linkIn(await awaitMail(to, { count: 2 }), ctx.config.publicBaseUrl)
      .split('/')
      .pop()!;
    expect(second).not.toBe(first);
    const guest = new DashboardClient(edge.url);
    expect((await guest.get(`/api/v1/dashboard/invitations/${first}`)).status).toBe(404);
    expect((await guest.get(`/api/v1/dashboard/invitations/${second}`)).status).toBe(200);

    for (const id of [newId('inv'), 'inv_nope', 'x'.repeat(300)]) {
      const res = await t.admin.c.post(`${t.base}/invitations/${id}/resend`);
      expect({ id, status: res.status, code: res.body.error.code }).toEqual({ id, status: 404, code: 'not_found' });
    }
    // Only an owner invites, or resends an invitation for, an owner.
    const forOwner = (await t.owner.c.post(`${t.base}/members`, { email: `o-${to}`, role: 'owner' })).body.invitation;
    expect((await t.admin.c.post(`${t.base}/invitations/${forOwner.id}/resend`)).status).toBe(403);
    expect((await t.admin.c.post(`${t.base}/members`, { email: `o2-${to}`, role: 'owner' })).status).toBe(403);
  });

  it("revokes an inviter's pending invitations when their right to make them goes", async () => {
    const t = await team();
    const tag = Date.now();
    const invite = async (c: DashboardClient, email: string, role: string) => {
      const res = await c.post(`${t.base}/members`, { email, role });
      expect(res.status).toBe(201);
      return { id: res.body.invitation.id as string, token: linkIn(await awaitMail(email), ctx.config.publicBaseUrl) };
    };
    const pendingIds = async () =>
      ((await t.owner.c.get(`${t.base}/members`)).body.invitations as { id: string }[]).map((i) => i.id).sort();
    const live = async (link: string) =>
      (await new DashboardClient(edge.url).get(`/api/v1/dashboard/invitations/${link.split('/').pop()}`)).status;

    // An admin lowered to member: every invitation they made goes.
    const byAdmin = await invite(t.admin.c, `a-${tag}@example.com`, 'admin');
    expect((await t.owner.c.patch(`${t.base}/members/${t.admin.user.id}`, { role: 'member' })).status).toBe(200);
    expect(await live(byAdmin.token)).toBe(404);

    // An owner lowered to admin: their owner invitations go, the rest stay.
    const second = await makeMember(ctx.db, t.ws.id, 'owner');
    const c2 = await signedIn(second.email, second.password);
    const ownerInv = await invite(c2, `o-${tag}@example.com`, 'owner');
    const memberInv = await invite(c2, `m-${tag}@example.com`, 'member');
    expect((await t.owner.c.patch(`${t.base}/members/${second.user.id}`, { role: 'admin' })).status).toBe(200);
    expect([await live(ownerInv.token), await live(memberInv.token)]).toEqual([404, 200]);
    expect(await pendingIds()).toEqual([memberInv.id]);

    // Removed from the workspace: all of theirs go.
    expect((await t.owner.c.delete(`${t.base}/members/${second.user.id}`)).status).toBe(204);
    expect(await live(memberInv.token)).toBe(404);

    // A deleted account: all of theirs go, in every workspace.
    const third = await makeMember(ctx.db, t.ws.id, 'admin');
    const c3 = await signedIn(third.email, third.password);
    const byDeleted = await invite(c3, `d-${tag}@example.com`, 'member');
    await ctx.db.user.delete({ where: { id: third.user.id } });
    expect(await live(byDeleted.token)).toBe(404);
    expect(await pendingIds()).toEqual([]);
  });

  it('refuses bad input to the invitation routes with the error shape, and changes nothing', async () => {
    const t = await team();
    const before = await ctx.db.invitation.count();
    const bad = [
      await t.admin.c.post(`${t.base}/members`, { email: 'not-an-address', role: 'member' }),
      await t.admin.c.post(`${t.base}/members`, { email: 'a@example.com', role: 'king' }),
      await t.admin.c.post(`${t.base}/members`, { email: 'a@example.com', role: 'member', url: 'x' }),
      await t.admin.c.post(`${t.base}/members`, { email: `${'a'.repeat(70_000)}@example.com`, role: 'member' }),
    ];
    expect(bad.map((r) => r.status)).toEqual([400, 400, 400, 413]);
    for (const r of bad) {
      expect(r.body.error).toEqual(expect.objectContaining({ type: expect.any(String), code: expect.any(String) }));
      expect(r.body.error.request_id).toBe(r.headers.get('x-request-id'));
    }
    const guest = new DashboardClient(edge.url);
    await guest.get('/api/v1/dashboard/session');
    for (const token of ['short', 'A'.repeat(43), 'x'.repeat(500)]) {
      const res = await guest.post(`/api/v1/dashboard/invitations/${token}/accept`, {
        password: 'a long new password',
      });
      expect({ token, status: res.status, code: res.body.error.code }).toEqual({
        token,
        status: 404,
        code: 'invitation_not_found',
      });
    }
    const { secret } = await makeKey(ctx.db, t.ws.id);
    const withKey = await fetch(`${edge.url}/api/v1/dashboard/invitations/${'A'.repeat(43)}`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    expect(withKey.status).toBe(403);
    expect(((await withKey.json()) as { error: { code: string } }).error.code).toBe('wrong_credential_class');
    const pending = await t.admin.c.post(`${t.base}/members`, { email: `k-${Date.now()}@example.com`, role: 'member' });
    const resendWithKey = await fetch(`${edge.url}${t.base}/invitations/${pending.body.invitation.id}/resend`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}` },
    });
    expect(resendWithKey.status).toBe(403);
    expect(((await resendWithKey.json()) as { error: { code: string } }).error.code).toBe('wrong_credential_class');
    expect(await ctx.db.invitation.findUniqueOrThrow({ where: { id: pending.body.invitation.id } })).toMatchObject({
      sends: 1,
    });
    expect(await ctx.db.invitation.count()).toBe(before + 1);
  });
});

describe('roles in the API', () => {
  it("bounds a key by its creator's role, stops it when the creator leaves, leaves CLI keys to scopes", async () => {
    const t = await team();
    const memberKey = (
      await t.member.c.post(`${t.base}/keys`, { name: 'm', scopes: ['files.write', 'tasks.write', 'account.read'] })
    ).body.secret as string;
    const adminKey = (await t.admin.c.post(`${t.base}/keys`, { name: 'a', scopes: ['files.write'] })).body
      .secret as string;
    const cliKey = (await makeKey(ctx.db, t.ws.id, { scopes: ['files.write'] })).secret;
    const outputs = await Promise.all([0, 1, 2].map(() => makeOutput(ctx, t.ws.id)));
    const del = (secret: string, id: string) =>
      fetch(`${edge.url}/v1/files/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${secret}` } });

    const refused = await del(memberKey, outputs[0]!.file.id);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: unknown }).error).toMatchObject({
      code: 'insufficient_role',
      param: 'admin',
    });
    const secret = await fetch(`${edge.url}/api/v1/me/callback-secret`, {
      headers: { authorization: `Bearer ${memberKey}` },
    });
    expect(secret.status).toBe(403);
    expect((await del(adminKey, outputs[0]!.file.id)).status).toBe(200);
    expect((await del(cliKey, outputs[1]!.file.id)).status).toBe(200);

    // Promoted, the member's key can; removed, it stops working on every replica within a second.
    expect((await t.owner.c.patch(`${t.base}/members/${t.member.user.id}`, { role: 'admin' })).status).toBe(200);
    // The first answer that is not 403 must be the delete itself.
    await eventually(
      async () => {
        const res = await del(memberKey, outputs[2]!.file.id);
        if (res.status === 403) return false;
        expect(res.status).toBe(200);
        return true;
      },
      "the promoted member's key deletes",
      1000,
    );
    expect((await t.owner.c.delete(`${t.base}/members/${t.member.user.id}`)).status).toBe(204);
    await eventually(
      async () => {
        const res = await balanceWith(memberKey);
        return (
          res.status === 401 && ((await res.json()) as { error: { code: string } }).error.code === 'key_creator_left'
        );
      },
      'the key of a member who left refused',
      1000,
    );
  });
});

describe('outputs library', () => {
  it('lists outputs newest first with previews, filters and pages; only admins and owners delete', async () => {
    const t = await team();
    const now = Date.now();
    const made = [];
    for (let i = 0; i < 5; i++) {
      made.push(
        await makeOutput(ctx, t.ws.id, {
          kind: i % 2 ? 'video' : 'image',
          model: i % 2 ? 'sim/video-1' : 'sim/image-1',
          prompt: `<b>prompt ${i}</b>`,
          createdAt: new Date(now - (5 - i) * 60_000),
          cost: 40_000n,
        }),
      );
    }
    await makeOutput(ctx, (await makeWorkspace(ctx.db)).id); // another workspace's

    const page1 = await t.member.c.get(`${t.base}/outputs?limit=3`);
    expect(page1.status).toBe(200);
    expect(page1.body.data.map((o: { id: string }) => o.id)).toEqual([
      made[4]!.file.id,
      made[3]!.file.id,
      made[2]!.file.id,
    ]);
    expect(page1.body.has_more).toBe(true);
    const first = page1.body.data[0];
    expect(first).toMatchObject({
      kind: 'image',
      model: 'sim/image-1',
      prompt: '<b>prompt 4</b>',
      size: '64x48',
      cost: { amount: 0.04, currency: 'USD' },
      task_id: made[4]!.task.id,
    });
    expect(page1.body.data[1]).toMatchObject({ kind: 'video', duration: 2 });
    // Relative to the edge's origin, whatever host name the dashboard was opened by.
    expect(first.preview_url).toMatch(new RegExp(`^/api/v1/files/${first.id}/content\\?token=`));
    expect(first.download_url).toBe(first.preview_url);
    const preview = await fetch(`${edge.url}${first.preview_url}`);
    expect(preview.status).toBe(200);
    expect(Buffer.from(await preview.arrayBuffer()).equals(made[4]!.bytes)).toBe(true);

    const page2 = await t.member.c.get(`${t.base}/outputs?limit=3&after=${page1.body.next_cursor}`);
    expect(page2.body.data.map((o: { id: string }) => o.id)).toEqual([made[1]!.file.id, made[0]!.file.id]);
    expect(page2.body.has_more).toBe(false);
    const videos = await t.member.c.get(`${t.base}/outputs?kind=video`);
    expect(videos.body.data).toHaveLength(2);
    const byModel = await t.member.c.get(`${t.base}/outputs?model=sim/image-1`);
    expect(byModel.body.data).toHaveLength(3);
    const today = new Date().toISOString().slice(0, 10);
    expect((await t.member.c.get(`${t.base}/outputs?from=${today}&to=${today}`)).body.data.length).toBeGreaterThan(0);
    expect((await t.member.c.get(`${t.base}/outputs?from=2001-01-01&to=2001-01-02`)).body.data).toHaveLength(0);
    for (const q of [
      'kind=text',
      'limit=0',
      'from=yesterday',
      'after=file_x',
      'from=2026-02-02&to=2026-02-01',
      'extra=1',
    ]) {
      const bad = await t.member.c.get(`${t.base}/outputs?${q}`);
      expect(bad.status).toBe(400);
    }
    expect((await t.member.c.get(`${t.base}/outputs?source=upload`)).body.data).toHaveLength(0);

    const byMember = await t.member.c.delete(`${t.base}/outputs/${made[4]!.file.id}`);
    expect(byMember.status).toBe(403);
    expect(byMember.body.error).toMatchObject({ code: 'insufficient_role', param: 'admin' });
    const byOwner = await t.owner.c.delete(`${t.base}/outputs/${made[4]!.file.id}`);
    expect(byOwner.status).toBe(200);
    expect(byOwner.body).toEqual({ id: made[4]!.file.id, deleted: true });
    await expect(
      ctx.s3.send(new HeadObjectCommand({ Bucket: ctx.config.s3.bucket, Key: made[4]!.key })),
    ).rejects.toMatchObject({ name: 'NotFound' });
    expect(await ctx.db.file.count({ where: { id: made[4]!.file.id } })).toBe(0);
    expect((await t.owner.c.delete(`${t.base}/outputs/${made[4]!.file.id}`)).status).toBe(404);
  });
});

describe('public copies', () => {
  /** A generated output whose library entry has expired while its public copy lives on. */
  async function pastLibrary(workspaceId: string) {
    const o = await makeOutput(ctx, workspaceId);
    await ctx.db.file.update({
      where: { id: o.file.id },
      data: { expiresAt: new Date(Date.now() - 60_000), publicExpiresAt: new Date(Date.now() + 86_400_000) },
    });
    return o;
  }
  const bytesOf = (key: string) => ctx.s3.send(new HeadObjectCommand({ Bucket: ctx.config.s3.bucket, Key: key }));
  const path = (base: string, id: string) => `${base}/outputs/${id}/public-copy`;

  it('lets admins and owners take a copy down after its library entry expired: bytes and row go', async () => {
    const t = await team();
    const [a, b] = [await pastLibrary(t.ws.id), await pastLibrary(t.ws.id)];
    // Not listed any more, but still public.
    expect((await t.admin.c.get(`${t.base}/outputs`)).body.data).toEqual([]);
    await expect(bytesOf(a.key)).resolves.toBeDefined();

    const rowA = await ctx.db.file.findUniqueOrThrow({ where: { id: a.file.id } });
    const byMember = await t.member.c.delete(path(t.base, a.file.id));
    expect(byMember.status).toBe(403);
    expect(byMember.body.error).toMatchObject({
      type: 'permission_error',
      code: 'insufficient_role',
      param: 'admin',
      request_id: expect.any(String),
    });
    expect(await ctx.db.file.findUniqueOrThrow({ where: { id: a.file.id } })).toEqual(rowA);
    await expect(bytesOf(a.key)).resolves.toBeDefined();

    for (const [who, o] of [
      [t.admin, a],
      [t.owner, b],
    ] as const) {
      const res = await who.c.delete(path(t.base, o.file.id));
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ id: o.file.id, object: 'public_copy', deleted: true });
      await expect(bytesOf(o.key)).rejects.toMatchObject({ name: 'NotFound' });
      expect(await ctx.db.file.count({ where: { id: o.file.id } })).toBe(0);
    }
    // Gone whole: a repeat finds nothing to take down.
    const again = await t.admin.c.delete(path(t.base, a.file.id));
    expect(again.status).toBe(404);
    expect(again.body.error).toMatchObject({ code: 'not_found', param: 'file_id' });
  });

  it("answers 404 for another workspace's output, an upload or a malformed id, and changes nothing", async () => {
    const t = await team();
    const foreign = await pastLibrary((await makeWorkspace(ctx.db)).id);
    const upload = await ctx.db.file.create({
      data: {
        id: newId('file'),
        workspaceId: t.ws.id,
        source: 'upload',
        purpose: 'user_data',
        filename: 'a.png',
        contentType: 'image/png',
        bytes: 1n,
        storageKey: `uploads/${newId('file')}`,
        expiresAt: new Date(Date.now() + 86_400_000),
      },
    });
    const rows = async () =>
      ctx.db.file.findMany({ where: { id: { in: [foreign.file.id, upload.id] } }, orderBy: { id: 'asc' } });
    const before = await rows();
    for (const id of [foreign.file.id, upload.id, 'file_x', 'x'.repeat(5000), '%00']) {
      const res = await t.owner.c.delete(path(t.base, encodeURIComponent(id)));
      expect(res.status).toBe(404);
      expect(res.body.error).toMatchObject({ type: 'not_found_error', code: 'not_found' });
      expect(res.body.error.message.length).toBeLessThan(200);
    }
    expect(await rows()).toEqual(before);
    await expect(bytesOf(foreign.key)).resolves.toBeDefined();
  });

  it('leaves a hidden, purgeable row when S3 fails, and a retry completes the take-down', async () => {
    const t = await team();
    const o = await pastLibrary(t.ws.id);
    // A real S3 client whose store is down: nothing listens on the port.
    const down = createS3({ ...ctx.config.s3, endpoint: 'http://127.0.0.1:9' });
    const broken = await startEdge(ctx, { s3: down });
    try {
      const c = new DashboardClient(broken.url);
      expect((await c.signIn(t.owner.email, t.owner.password)).status).toBe(200);
      const res = await c.delete(path(t.base, o.file.id));
      expect(res.status).toBe(503);
      expect(res.body.error).toMatchObject({ code: 'storage_unavailable' });
    } finally {
      await broken.close();
    }
    // The copy's life is over in the row (the retention sweep finishes it); the bytes are still there.
    const row = await ctx.db.file.findUniqueOrThrow({ where: { id: o.file.id } });
    expect(row.publicExpiresAt!.getTime()).toBeLessThanOrEqual(Date.now());
    expect((await fileRepository.purgeable(ctx.db, new Date(), 1000)).map((f) => f.id)).toContain(o.file.id);
    await expect(bytesOf(o.key)).resolves.toBeDefined();

    const retry = await t.owner.c.delete(path(t.base, o.file.id));
    expect(retry.status).toBe(200);
    await expect(bytesOf(o.key)).rejects.toMatchObject({ name: 'NotFound' });
    expect(await ctx.db.file.count({ where: { id: o.file.id } })).toBe(0);
  });

  it('takes down an output still in the library: it leaves the library with its copy', async () => {
    const t = await team();
    const o = await makeOutput(ctx, t.ws.id);
    const listed = (await t.member.c.get(`${t.base}/outputs`)).body.data;
    expect(listed.map((x: { id: string }) => x.id)).toEqual([o.file.id]);
    expect(listed[0].public_copy_expires_at).toBe(o.file.publicExpiresAt!.toISOString());
    expect((await t.owner.c.delete(path(t.base, o.file.id))).status).toBe(200);
    expect((await t.member.c.get(`${t.base}/outputs`)).body.data).toEqual([]);
    await expect(bytesOf(o.key)).rejects.toMatchObject({ name: 'NotFound' });
  });
});

describe('tasks, deliveries and the callback secret', () => {
  it('shows tasks with their attempts; redelivery and the secret are for admins and owners', async () => {
    const t = await team();
    const { task } = await makeOutput(ctx, t.ws.id);
    await ctx.db.task.update({
      where: { id: task.id },
      data: { callbackUrl: 'https://receiver.example/hook', callbackState: 'parked' },
    });
    await ctx.db.callbackAttempt.create({
      data: {
        id: newId('cba'),
        workspaceId: t.ws.id,
        taskId: task.id,
        attempt: 1,
        deliveryId: 'dlv_1',
        url: 'https://receiver.example/hook',
        statusCode: 500,
        durationMs: 12,
        error: 'receiver answered 500',
      },
    });
    const list = await t.member.c.get(`${t.base}/tasks`);
    expect(list.body.data[0]).toMatchObject({ task_id: task.id, status: 'completed', callback_state: 'parked' });
    const detail = await t.member.c.get(`${t.base}/tasks/${task.id}`);
    expect(detail.body.task).toMatchObject({ task_id: task.id, callback_url: 'https://receiver.example/hook' });
    expect(detail.body.attempts).toEqual([
      expect.objectContaining({ attempt: 1, status_code: 500, duration_ms: 12, error: 'receiver answered 500' }),
    ]);

    expect((await t.member.c.post(`${t.base}/tasks/${task.id}/redeliver`)).status).toBe(403);
    const again = await t.admin.c.post(`${t.base}/tasks/${task.id}/redeliver`);
    expect(again.status).toBe(202);
    expect((await ctx.db.task.findUniqueOrThrow({ where: { id: task.id } })).callbackState).toBe('pending');

    expect((await t.member.c.get(`${t.base}/callback-secret`)).status).toBe(403);
    const s1 = await t.admin.c.get(`${t.base}/callback-secret`);
    expect(s1.body.secret).toMatch(/^whsec_/);
    const s2 = await t.owner.c.post(`${t.base}/callback-secret/rotate`);
    expect(s2.body.secret).not.toBe(s1.body.secret);
    expect(s2.body.previous_expires_at).not.toBeNull();
  });
});

describe('callback tools', () => {
  it('recovers parked deliveries and sends test callbacks for admins and owners only, with a CSRF token', async () => {
    const t = await team();
    const parkedAt = new Date(Date.now() - 3_600_000);
    const { task } = await makeOutput(ctx, t.ws.id);
    await ctx.db.task.update({
      where: { id: task.id },
      data: { callbackUrl: 'https://receiver.example/hook', callbackState: 'parked', updatedAt: parkedAt },
    });
    const since = new Date(Date.now() - 86_400_000).toISOString();
    const recover = `${t.base}/callbacks/recover`;

    const refused = await t.member.c.post(recover, { since });
    expect(refused).toMatchObject({ status: 403, body: { error: { code: 'insufficient_role' } } });
    const noCsrf = await t.admin.c.request('POST', recover, { since }, { 'x-csrf-token': '' });
    expect(noCsrf.status).toBe(403);
    const bad = await t.admin.c.post(recover, { since: 'last week' });
    expect(bad).toMatchObject({ status: 400, body: { error: { code: 'invalid_request', param: 'since' } } });
    expect((await ctx.db.task.findUniqueOrThrow({ where: { id: task.id } })).callbackState).toBe('parked');

    const done = await t.admin.c.post(recover, { since });
    expect(done).toMatchObject({ status: 200, body: { object: 'callback_recovery', recovered: 1, has_more: false } });
    expect((await ctx.db.task.findUniqueOrThrow({ where: { id: task.id } })).callbackState).toBe('pending');
    expect((await t.owner.c.post(recover, { since })).body).toMatchObject({ recovered: 0 });

    const test = `${t.base}/callbacks/test`;
    expect((await t.member.c.post(test, { url: 'https://receiver.example/hook' })).status).toBe(403);
    // The edge under test lets no private address through: refused before anything is sent.
    const local = await t.admin.c.post(test, { url: 'https://127.0.0.1/hook' });
    expect(local).toMatchObject({ status: 400, body: { error: { code: 'invalid_callback_url' } } });
  });
});

describe('usage', () => {
  it('charts spend per day from the ledger, by model or by key, with totals that equal the ledger', async () => {
    const t = await team();
    const k1 = await makeKey(ctx.db, t.ws.id, { name: 'one' });
    const k2 = await makeKey(ctx.db, t.ws.id, { name: 'two' });
    const charge = async (key: string, model: string, cost: bigint) => {
      const hold = await billingRepository.reserve(ctx.db, {
        workspaceId: t.ws.id,
        apiKeyId: key,
        requestId: 'req_u',
        amount: cost,
        ttlMs: 60_000,
      });
      await billingRepository.settle(ctx.db, hold.id, { cost, model });
    };
    await charge(k1.key.id, 'sim/chat-1', 1_250_000n);
    await charge(k1.key.id, 'sim/eval-1', 300_000n);
    await charge(k2.key.id, 'sim/chat-1', 50_000n);
    // A charge two days ago lands on its own day.
    const old = await ctx.db.ledgerEntry.findFirstOrThrow({ where: { workspaceId: t.ws.id, apiKeyId: k2.key.id } });
    await ctx.db.ledgerEntry.update({
      where: { id: old.id },
      data: { createdAt: new Date(Date.now() - 2 * 86_400_000) },
    });

    const byModel = await t.member.c.get(`${t.base}/usage?days=30&split=model`);
    expect(byModel.status).toBe(200);
    expect(byModel.body.days).toHaveLength(30);
    expect(byModel.body.days.at(-1)).toBe(new Date().toISOString().slice(0, 10));
    expect(byModel.body.total).toBe(1.6);
    const chat = byModel.body.series.find((s: { id: string }) => s.id === 'sim/chat-1');
    expect(chat.amounts.at(-1)).toBe(1.25);
    expect(chat.amounts.at(-3)).toBe(0.05);
    const sum = byModel.body.series
      .flatMap((s: { amounts: number[] }) => s.amounts)
      .reduce((a: number, b: number) => a + b, 0);
    expect(Math.round(sum * 1e6)).toBe(1_600_000);

    const byKey = await t.member.c.get(`${t.base}/usage?split=key`);
    const one = byKey.body.series.find((s: { id: string }) => s.id === k1.key.id);
    expect(one.label).toContain('one');
    expect(one.amounts.at(-1)).toBe(1.55);
    expect(byKey.body.keys.find((k: { id: string }) => k.id === k1.key.id).spent).toBe(1.55);
    expect(byKey.body.balance).toBe(10 - 1.6);
    expect((await t.member.c.get(`${t.base}/usage?days=400`)).status).toBe(400);
    expect((await t.member.c.get(`${t.base}/usage?split=day`)).status).toBe(400);
  });
});
