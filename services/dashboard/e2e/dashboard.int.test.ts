// The dashboard in a real browser (Debian's Chromium through playwright-core) against the real edge over a socket,
// with real Postgres, Redis and S3: every page checked, with axe-core on each page and a screenshot of
// each for the README.
import { createHmac } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { gzipSync } from 'node:zlib';
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import {
  apiKeyRepository,
  callbackRepository,
  fileRepository,
  membershipRepository,
  modelRepository,
} from '@gensvc/db';
import {
  awaitMail,
  eventually,
  linkIn,
  mailTo,
  spawnService,
  startTlsServer,
  useTestContext,
  waitForOutput,
  type ServiceProcess,
  type TlsTestServer,
} from '@gensvc/testing';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startEdge, type EdgeUnderTest } from '../../edge/src/edge-under-test';
import { axeViolations, ensureBuilt, launchChromium, screenshot, watchPage } from './browser';
import {
  addMember,
  makeDeliveredTask,
  makeKey,
  makeOutput,
  makeParkedTask,
  makeUpload,
  makeUser,
  makeWorkspace,
  seedCharges,
  type SeededOutput,
} from './seed';

jest.setTimeout(120_000);

// Loopback let through for the test callback's receiver, whose certificate the edge trusts through its test CA.
// biome-ignore lint/correctness/useHookAtTopLevel: a jest set-up helper named like a hook, not a React hook
const ctx = useTestContext({ OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32' });
let edge: EdgeUnderTest;
let receiver: TlsTestServer;
const received: { path: string; headers: IncomingHttpHeaders; body: Buffer }[] = [];
let browser: Browser;
let mailSender: ServiceProcess;

const OWNER = { email: 'olivia.owner@example.com', password: 'correct horse battery staple', name: 'Olivia Owner' };
const INVITED = { email: 'new.member@example.com', password: 'a long enough password', name: 'Nico Member' };
const USD = (micros: bigint) =>
  new Intl.NumberFormat('en-US', {
    style: 'currency',
    currency: 'USD',
    minimumFractionDigits: 2,
    maximumFractionDigits: 2,
  }).format(Number(micros) / 1e6);

let ws: { id: string; name: string };
let otherWs: { id: string; name: string };
let grace: { id: string };
const outputs: SeededOutput[] = [];
let uploadName = '';
let deliveredTaskId = '';
let parkedTaskId = '';
let oldParkedTaskId = '';
let charged = { total: 0n, entries: 0 };
let keyIds: string[] = [];

beforeAll(async () => {
  ensureBuilt();
  receiver = await startTlsServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ path: req.url ?? '/', headers: req.headers, body: Buffer.concat(chunks) });
      res.statusCode = 201;
      res.end('{"received":true}');
    });
  });
  edge = await startEdge(ctx, { outbound: { ca: receiver.caPem } });
  // The invitation links the edge hands out name PUBLIC_BASE_URL: this edge's address here.
  (edge.deps.config as { publicBaseUrl: string }).publicBaseUrl = edge.url;
  // The mailed links (invitations, password resets) are made by the sender, on the same address.
  mailSender = spawnService('callback-dispatcher', { ...ctx.env, PUBLIC_BASE_URL: edge.url, LOG_LEVEL: 'info' });
  await waitForOutput(mailSender, 'callback dispatcher started');
  browser = await launchChromium();

  ws = await makeWorkspace(ctx.db, { name: 'Acme Studio', balance: 48_250_000n });
  otherWs = await makeWorkspace(ctx.db, { name: 'Side Project', tier: 'free' });
  const owner = await makeUser(ctx.db, OWNER.email, OWNER.password, OWNER.name);
  await addMember(ctx.db, ws.id, owner.id, 'owner');
  await addMember(ctx.db, otherWs.id, owner.id, 'owner');
  grace = await makeUser(ctx.db, 'grace.hopper@example.com', 'another long password', 'Grace Hopper');
  await addMember(ctx.db, ws.id, grace.id, 'member');

  await modelRepository.create(ctx.db, { id: 'sim/chat-e2e', kind: 'chat' });
  const production = await makeKey(ctx.db, ws.id, { name: 'production', spendCap: 25_000_000n, spent: 3_120_000n });
  const staging = await makeKey(ctx.db, ws.id, { name: 'staging', scopes: ['llm.evaluate', 'tasks.read'] });
  keyIds = [production.key.id, staging.key.id];
  charged = await seedCharges(ctx.db, ws.id, keyIds);
  const prompts = [
    'a lighthouse at dawn, oil painting',
    'isometric city block at night',
    'a bowl of ramen, studio light',
    'mountain lake, mist',
    'abstract waves in purple',
  ];
  for (let i = 0; i < 26; i++) {
    const kind = i === 3 ? 'video' : 'image';
    outputs.push(
      await makeOutput(ctx, ws.id, production.key.id, {
        prompt: `${prompts[i % prompts.length]} #${26 - i}`,
        model: kind === 'video' ? 'sim/video-1' : 'sim/image-1',
        kind,
        index: i,
        ageMinutes: i * 37,
      }),
    );
  }
  uploadName = 'reference-photo.png';
  await makeUpload(ctx, ws.id, uploadName);
  deliveredTaskId = await makeDeliveredTask(ctx, ws.id, production.key.id);
  parkedTaskId = await makeParkedTask(ctx, ws.id, production.key.id, 2 * 3_600_000);
  oldParkedTaskId = await makeParkedTask(ctx, ws.id, production.key.id, 72 * 3_600_000);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await edge?.close();
  await receiver?.close();
  await mailSender?.stop();
});

async function newPage(): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
  const context = await browser.newContext({
    baseURL: edge.url,
    viewport: { width: 1280, height: 800 },
    deviceScaleFactor: 1,
    reducedMotion: 'reduce',
  });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: edge.url });
  context.setDefaultTimeout(8_000);
  const page = await context.newPage();
  return { context, page, problems: watchPage(page) };
}

async function expectAccessible(page: Page) {
  expect(await axeViolations(page)).toEqual([]);
}

async function signIn(page: Page, who: { email: string; password: string }) {
  await page.getByLabel('Email address').fill(who.email);
  await page.getByLabel('Password').fill(who.password);
  await page.getByRole('button', { name: 'Continue' }).click();
}

const balanceWith = (secret: string) =>
  fetch(`${edge.url}/api/v1/me/balance`, { headers: { Authorization: `Bearer ${secret}` } });

/** A state-changing call from the page itself, with the CSRF token the page would send. */
function pageCall(page: Page, method: string, path: string) {
  return page.evaluate(
    async ({ method, path }) => {
      const csrf =
        document.cookie
          .split('; ')
          .find((c) => c.startsWith('gsvc_csrf='))
          ?.slice('gsvc_csrf='.length) ?? '';
      const r = await fetch(path, { method, headers: { 'X-CSRF-Token': csrf } });
      return { status: r.status, body: (await r.json()) as { error?: { code: string } } };
    },
    { method, path },
  );
}

describe('the owner', () => {
  let owner: Awaited<ReturnType<typeof newPage>>;
  beforeAll(async () => {
    owner = await newPage();
  });
  afterAll(() => owner.context.close());
  afterEach(() => expect(owner.problems).toEqual([]));

  it('is sent from / to the sign-in page, is refused a wrong password, and signs in', async () => {
    const { page } = owner;
    await page.goto('/');
    await page.waitForURL(/\/dashboard\/sign-in/);
    await expect(page.getByRole('heading', { name: 'Welcome back' }).isVisible()).resolves.toBe(true);
    await expectAccessible(page);
    await screenshot(page, 'sign-in');

    await signIn(page, { email: OWNER.email, password: 'not the password' });
    await expect(page.getByRole('alert').textContent()).resolves.toContain('The email or password is not correct.');

    await signIn(page, OWNER);
    await page.waitForURL(`**/dashboard/w/${ws.id}/outputs`);
    await page.getByRole('heading', { name: 'Outputs', level: 1 }).waitFor();
  });

  let secret = '';
  let rotated = '';
  const keyName = '<img src=x onerror=alert(1)> deploy bot';

  it('creates a key, sees its secret once, copies it, and the secret works against the API', async () => {
    const { page } = owner;
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.waitForURL(`**/dashboard/w/${ws.id}/keys`);
    await page.getByRole('button', { name: 'Create new secret key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create new secret key' });
    await dialog.getByLabel('Name').fill(keyName);
    await dialog.getByLabel(/Spend cap/).fill('5');
    await dialog.getByLabel('Expires').selectOption('30');
    // Limited to one model and 7 calls a minute; a model that does not exist is refused, naming it.
    await dialog.getByLabel(/Models/).fill('sim/chat-e2e, sim/typo');
    await dialog.getByLabel(/Calls per minute/).fill('7');
    await dialog.getByRole('button', { name: 'Create secret key' }).click();
    await dialog.getByText('there is no model "sim/typo"').waitFor();
    await dialog.getByLabel(/Models/).fill('sim/chat-e2e');
    await dialog.getByRole('button', { name: 'Create secret key' }).click();

    const shown = page.getByRole('dialog', { name: 'Save your key' });
    secret = await shown.getByRole('textbox', { name: 'Secret key' }).inputValue();
    expect(secret).toMatch(/^gsk_[A-Za-z0-9_-]{40,}$/);
    await expectAccessible(page);
    await screenshot(page, 'keys-secret');
    await shown.getByRole('button', { name: 'Copy secret key' }).click();
    await shown.getByRole('button', { name: 'Copy secret key' }).filter({ hasText: 'Copied' }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);

    const res = await balanceWith(secret);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { workspace_id: string }).workspace_id).toBe(ws.id);

    await shown.getByRole('button', { name: 'Done' }).click();
    await expect(page.getByRole('dialog').count()).resolves.toBe(0);
    // Shown once: nothing on the page holds the secret any more.
    expect(await page.content()).not.toContain(secret);
    // The name is text, never markup.
    const row = page.locator('tr', { hasText: 'deploy bot' });
    await expect(row.locator('.key-name').textContent()).resolves.toBe(keyName);
    await expect(page.locator('table img').count()).resolves.toBe(0);
    await expect(row.textContent()).resolves.toContain(secret.slice(0, 8));
    await expect(row.textContent()).resolves.toContain(OWNER.email);
    await expect(row.textContent()).resolves.toContain('$5.00');
    await expect(row.locator('.key-models').textContent()).resolves.toBe('models: sim/chat-e2e');
    await expect(row.locator('.key-rpm').textContent()).resolves.toBe('7 calls/min');
    // The edge holds the key to them: another model is refused, and its own rpm is the binding limit.
    const other = await fetch(`${edge.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim/image-1', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(other.status).toBe(403);
    expect(((await other.json()) as { error: { code: string } }).error.code).toBe('model_not_allowed');
    expect(other.headers.get('x-ratelimit-limit-rpm')).toBe('7');
  });

  it('rotates the key without grace: the old secret stops, the new one works', async () => {
    const { page } = owner;
    await page.getByRole('button', { name: `Rotate key ${keyName}` }).click();
    const dialog = page.getByRole('dialog', { name: /Rotate/ });
    await dialog.getByLabel('Grace period for the old secret').selectOption('0');
    await dialog.getByRole('button', { name: 'Rotate key' }).click();
    rotated = await page
      .getByRole('dialog', { name: 'Your new secret key' })
      .getByRole('textbox', { name: 'Secret key' })
      .inputValue();
    expect(rotated).toMatch(/^gsk_/);
    expect(rotated).not.toBe(secret);
    await page.getByRole('button', { name: 'Done' }).click();

    await eventually(async () => (await balanceWith(secret)).status === 401, 'the old secret is refused', 3_000);
    expect((await balanceWith(rotated)).status).toBe(200);
  });

  it('revokes the key after confirming, and every call with it is refused within a second', async () => {
    const { page } = owner;
    await page.getByRole('button', { name: `Revoke key ${keyName}` }).click();
    const confirm = page.getByRole('dialog', { name: 'Revoke secret key' });
    await expectAccessible(page);
    await confirm.getByRole('button', { name: 'Revoke key' }).click();
    await page.locator('tr', { hasText: 'deploy bot' }).getByText('revoked').waitFor();
    const revokedAt = Date.now();
    await eventually(async () => (await balanceWith(rotated)).status === 401, 'the revoked key is refused', 1_000);
    expect(Date.now() - revokedAt).toBeLessThan(1_000);
    await expect(page.getByRole('button', { name: `Rotate key ${keyName}` }).count()).resolves.toBe(0);
    await expectAccessible(page);
    await screenshot(page, 'keys');
  });

  it('shows who made each key, and offers Rotate only where the new secret may go to the owner', async () => {
    const { page } = owner;
    // A member's key, and one whose creator was deleted (its creator reads null; it was not made by the CLI).
    const made = (name: string, creatorId: string | null) =>
      apiKeyRepository.create(ctx.db, {
        workspaceId: ws.id,
        name,
        prefix: `gsk_${name.slice(0, 8)}`,
        hash: `${name}-hash`.padEnd(64, '0'),
        scopes: ['account.read'],
        creatorId,
        createdVia: 'dashboard',
      });
    await made('grace-key', grace.id);
    await made('orphan-key', null);
    await page.reload();
    const row = (name: string) => page.locator('tr', { has: page.locator('.key-name', { hasText: name }) });
    await row('orphan-key').waitFor();

    await expect(row('grace-key').locator('.creator-cell').textContent()).resolves.toBe('grace.hopper@example.com');
    await expect(row('orphan-key').locator('.creator-cell').textContent()).resolves.toBe('Deleted user');
    await expect(row('production').locator('.creator-cell').textContent()).resolves.toBe('CLI');
    for (const name of ['grace-key', 'orphan-key']) {
      await expect(
        row(name)
          .getByRole('button', { name: `Rotate key ${name}` })
          .count(),
      ).resolves.toBe(0);
      await expect(
        row(name)
          .getByRole('button', { name: `Revoke key ${name}` })
          .count(),
      ).resolves.toBe(1);
    }
    // A key the CLI made without a creator: an owner rotates it.
    await expect(row('production').getByRole('button', { name: 'Rotate key production' }).count()).resolves.toBe(1);
    await expectAccessible(page);
  });

  let invitationLink = '';

  it('changes a role and invites a new member: the link goes by mail only; resends and revokes', async () => {
    const { page } = owner;
    await page.getByRole('link', { name: 'Members' }).click();
    await page.getByRole('heading', { name: 'Members', level: 1 }).waitFor();

    const changed = page.waitForResponse(
      (r) => r.request().method() === 'PATCH' && r.url().includes(`/members/${grace.id}`),
    );
    await page.getByLabel('Role of Grace Hopper').selectOption('admin');
    expect((await changed).status()).toBe(200);
    expect((await membershipRepository.get(ctx.db, ws.id, grace.id))?.role).toBe('admin');

    await page.getByLabel('Email address').fill(INVITED.email);
    await page.getByLabel('Role', { exact: true }).selectOption('member');
    await page.getByRole('button', { name: 'Send invitation' }).click();
    await page.getByText(`Invitation sent to ${INVITED.email}.`).waitFor();
    const first = linkIn(await awaitMail(INVITED.email), `${edge.url}/dashboard/invite/`);
    expect(first).toMatch(new RegExp(`^${edge.url}/dashboard/invite/[A-Za-z0-9_-]{43}$`));
    // The page never holds the link.
    expect(await page.content()).not.toContain(first.split('/').pop()!);
    await page.getByRole('heading', { name: 'Pending invitations' }).waitFor();
    const row = page.locator('tr', { hasText: INVITED.email });
    await expect(row.count()).resolves.toBe(1);
    await expect(row.getByRole('cell', { name: 'Sent', exact: true }).count()).resolves.toBe(1);

    // Resent: a new link by mail, and the first one stops working.
    await page.getByRole('button', { name: `Resend the invitation of ${INVITED.email}` }).click();
    await row.getByText('Sent 2 times').waitFor();
    invitationLink = linkIn(await awaitMail(INVITED.email, { count: 2 }), `${edge.url}/dashboard/invite/`);
    expect(invitationLink).not.toBe(first);
    const info = (link: string) => fetch(`${edge.url}/api/v1/dashboard/invitations/${link.split('/').pop()}`);
    expect((await info(first)).status).toBe(404);
    expect((await info(invitationLink)).status).toBe(200);
    await expectAccessible(page);
    await screenshot(page, 'members');

    // Revoked: its row and its link go.
    await page.getByLabel('Email address').fill('changed.mind@example.com');
    await page.getByRole('button', { name: 'Send invitation' }).click();
    const revoked = linkIn(await awaitMail('changed.mind@example.com'), `${edge.url}/dashboard/invite/`);
    await page.getByRole('button', { name: 'Revoke the invitation of changed.mind@example.com' }).click();
    const dialog = page.getByRole('dialog', { name: 'Revoke invitation' });
    await expectAccessible(page);
    await dialog.getByRole('button', { name: 'Revoke invitation' }).click();
    await eventually(
      async () => (await page.locator('tr', { hasText: 'changed.mind@example.com' }).count()) === 0,
      'the invitation row is gone',
    );
    expect((await info(revoked)).status).toBe(404);
  });

  it('cannot demote the last owner: the edge says why and nothing changes', async () => {
    const { page } = owner;
    const me = await ctx.db.user.findUniqueOrThrow({ where: { email: OWNER.email } });
    const answered = page.waitForResponse(
      (r) => r.request().method() === 'PATCH' && r.url().includes(`/members/${me.id}`),
    );
    await page.getByLabel('Role of Olivia Owner').selectOption('member');
    expect((await answered).status()).toBe(409);
    await expect(page.locator('tr', { hasText: OWNER.email }).getByRole('alert').textContent()).resolves.toContain(
      'at least one owner',
    );
    await expect(page.getByLabel('Role of Olivia Owner').inputValue()).resolves.toBe('owner');
    expect((await membershipRepository.get(ctx.db, ws.id, me.id))?.role).toBe('owner');
  });

  it('removes a member after confirming', async () => {
    const { page } = owner;
    await page.getByRole('button', { name: 'Remove Grace Hopper' }).click();
    const confirm = page.getByRole('dialog', { name: 'Remove member' });
    await expectAccessible(page);
    await confirm.getByRole('button', { name: 'Remove member' }).click();
    await eventually(
      async () => (await page.locator('tr', { hasText: 'grace.hopper@example.com' }).count()) === 0,
      'the row is gone',
    );
    expect(await membershipRepository.get(ctx.db, ws.id, grace.id)).toBeNull();
  });

  describe('the invited member', () => {
    let member: Awaited<ReturnType<typeof newPage>>;
    beforeAll(async () => {
      member = await newPage();
    });
    afterAll(() => member.context.close());
    afterEach(() => expect(member.problems).toEqual([]));

    it('accepts the invitation by choosing a password, and is signed in to the workspace', async () => {
      const { page } = member;
      await page.goto(invitationLink.replace(edge.url, ''));
      await page.getByRole('heading', { name: 'Join Acme Studio' }).waitFor();
      await expectAccessible(page);
      await screenshot(page, 'invite');
      await page.getByLabel('Your name (optional)').fill(INVITED.name);
      await page.getByLabel('Choose a password').fill(INVITED.password);
      await page.getByLabel('Repeat the password').fill(INVITED.password);
      await page.getByRole('button', { name: 'Create account and join' }).click();
      await page.waitForURL(`**/dashboard/w/${ws.id}/outputs`);
      const user = await ctx.db.user.findUniqueOrThrow({ where: { email: INVITED.email } });
      expect((await membershipRepository.get(ctx.db, ws.id, user.id))?.role).toBe('member');
    });

    it('sees outputs newest first with image and video previews, pages with Load more, filters by kind', async () => {
      const { page } = member;
      const tiles = page.locator('ul.grid > li');
      await eventually(async () => (await tiles.count()) === 24, 'the first page of outputs');
      // Newest first: the seeded outputs were made newest first.
      const firstIds = await page
        .locator('[data-output-id]')
        .evaluateAll((els) => els.map((e) => e.getAttribute('data-output-id')));
      expect(firstIds).toEqual(outputs.slice(0, 24).map((o) => o.fileId));
      // The thumbnails really loaded, through the signed links, under the page's CSP.
      await eventually(
        () =>
          page
            .locator('img.thumb')
            .evaluateAll((imgs) =>
              imgs
                .slice(0, 6)
                .every((i) => (i as HTMLImageElement).complete && (i as HTMLImageElement).naturalWidth === 256),
            ),
        'the first thumbnails decode',
      );
      const video = page.locator('video.thumb');
      await expect(video.count()).resolves.toBe(1);
      await expect(
        video.evaluate((v) => ({
          muted: (v as HTMLVideoElement).muted,
          preload: v.getAttribute('preload'),
          autoplay: (v as HTMLVideoElement).autoplay,
        })),
      ).resolves.toEqual({ muted: true, preload: 'metadata', autoplay: false });

      await page.getByRole('button', { name: 'Load more' }).click();
      await eventually(async () => (await tiles.count()) === 26, 'the second page of outputs');
      await expect(page.getByRole('button', { name: 'Load more' }).count()).resolves.toBe(0);

      await page.getByLabel('Kind').selectOption('video');
      await eventually(
        async () =>
          (
            await page
              .locator('[data-output-id]')
              .evaluateAll((els) => els.map((e) => e.getAttribute('data-output-id')))
          ).join() === outputs[3]!.fileId,
        'only the video',
      );
      await page.getByLabel('Kind').selectOption('');
      await eventually(async () => (await tiles.count()) === 24, 'all kinds again');
      await expectAccessible(page);
    });

    it('previews an output with its prompt, model, size and cost, and is offered no Delete', async () => {
      const { page } = member;
      const first = outputs[0]!;
      await page.locator(`[data-output-id="${first.fileId}"]`).click();
      const pane = page.getByRole('complementary', { name: 'Preview' });
      await pane.getByText(first.prompt).waitFor();
      const details = await pane.locator('dl').textContent();
      expect(details).toContain('sim/image-1');
      expect(details).toContain('512x512');
      expect(details).toContain('$0.04');
      expect(await pane.getByRole('link', { name: 'Download' }).getAttribute('href')).toMatch(
        new RegExp(`^/api/v1/files/${first.fileId}/content\\?token=`),
      );
      await expect(page.getByRole('button', { name: 'Delete' }).count()).resolves.toBe(0);
      await expect(page.getByRole('button', { name: 'Take down a public copy' }).count()).resolves.toBe(0);
      await expectAccessible(page);
    });

    it('is refused a delete sent straight to the JSON route (403), and the bytes stay', async () => {
      const { page } = member;
      const target = outputs[1]!;
      const answer = await pageCall(page, 'DELETE', `/api/v1/dashboard/workspaces/${ws.id}/outputs/${target.fileId}`);
      // insufficient_role, not csrf_failed: the token was right, the role was not.
      expect(answer).toEqual({ status: 403, body: { error: expect.objectContaining({ code: 'insufficient_role' }) } });
      await expect(
        ctx.s3.send(new HeadObjectCommand({ Bucket: ctx.config.s3.bucket, Key: target.storageKey })),
      ).resolves.toBeDefined();
      expect(await fileRepository.get(ctx.db, ws.id, target.fileId)).not.toBeNull();
    });

    it('sees uploads in their own tab', async () => {
      const { page } = member;
      await page.getByRole('tab', { name: 'Uploads' }).click();
      await page.waitForURL(/source=upload/);
      await page.getByText(uploadName).waitFor();
      await expect(page.locator('[data-output-id]').count()).resolves.toBe(1);
      await expectAccessible(page);
    });

    it('sees tasks but neither the callback secret, the callback tools nor Redeliver', async () => {
      const { page } = member;
      await page.getByRole('link', { name: 'Tasks' }).click();
      await page.getByRole('link', { name: deliveredTaskId }).waitFor();
      await expect(page.getByRole('button', { name: 'Reveal secret' }).count()).resolves.toBe(0);
      await expect(page.getByRole('button', { name: 'Recover parked deliveries' }).count()).resolves.toBe(0);
      await expect(page.getByRole('button', { name: 'Send a test callback' }).count()).resolves.toBe(0);
      await page.getByRole('link', { name: deliveredTaskId }).click();
      await page.getByRole('heading', { name: 'Callback attempts' }).waitFor();
      await expect(page.getByRole('button', { name: 'Redeliver' }).count()).resolves.toBe(0);
    });

    it('changes their password', async () => {
      const { page } = member;
      await page.getByRole('link', { name: 'Account' }).click();
      await page.getByLabel('Current password').fill(INVITED.password);
      await page.getByLabel('New password', { exact: true }).fill('a brand new passphrase');
      await page.getByLabel('Repeat the new password').fill('a brand new passphrase');
      await page.getByRole('button', { name: 'Change password' }).click();
      await page.getByText('Password changed.').waitFor();
      await expectAccessible(page);
      await screenshot(page, 'account');
      // Still signed in (the answer carried a new session), and the new CSRF token works.
      await page.getByRole('link', { name: 'Outputs' }).click();
      await page.locator('[data-output-id]').first().waitFor();
    });
  });

  it('lets a member who forgot the password set a new one by a mailed link, signing them out everywhere', async () => {
    const forgetful = await newPage();
    try {
      const { page } = forgetful;
      await page.goto('/dashboard/sign-in');
      await page.getByRole('link', { name: 'Forgot your password?' }).click();
      await page.getByRole('heading', { name: 'Forgot your password?' }).waitFor();
      await expectAccessible(page);
      await page.getByLabel('Email address').fill(INVITED.email);
      await page.getByRole('button', { name: 'Send the link' }).click();
      await page.getByText('If an account has this address').waitFor();
      const mail = await eventually(
        async () => (await mailTo(INVITED.email)).find((m) => m.subject === 'Set a new gensvc password'),
        'the reset mail',
        15_000,
      );
      await page.goto(linkIn(mail, `${edge.url}/dashboard/reset-password/`).replace(edge.url, ''));
      await page.getByRole('heading', { name: 'Set a new password' }).waitFor();
      await expectAccessible(page);
      await page.getByLabel('New password', { exact: true }).fill('a password I will remember');
      await page.getByLabel('Repeat the new password').fill('a password I will remember');
      await page.getByRole('button', { name: 'Set password' }).click();
      await page.getByRole('heading', { name: 'Password set' }).waitFor();
      const user = await ctx.db.user.findUniqueOrThrow({ where: { email: INVITED.email } });
      expect(await ctx.db.session.count({ where: { userId: user.id, revokedAt: null } })).toBe(0);
      await page.getByRole('link', { name: 'Sign in' }).click();
      await signIn(page, { email: INVITED.email, password: 'a password I will remember' });
      await page.waitForURL(`**/dashboard/w/${ws.id}/outputs`);
      expect(forgetful.problems).toEqual([]);
    } finally {
      await forgetful.context.close();
    }
  });

  it('deletes an output after confirming: the tile, the row and the bytes in S3 are gone', async () => {
    const { page } = owner;
    const target = outputs[2]!;
    await page.getByRole('link', { name: 'Outputs' }).click();
    await page.locator(`[data-output-id="${target.fileId}"]`).click();
    const pane = page.getByRole('complementary', { name: 'Preview' });
    await pane.getByText(target.prompt).waitFor();
    await eventually(
      () => pane.locator('img').evaluate((i) => (i as HTMLImageElement).naturalWidth > 0),
      'the preview decodes',
    );
    await expectAccessible(page);
    await screenshot(page, 'outputs');

    await pane.getByRole('button', { name: 'Delete' }).click();
    const confirm = page.getByRole('dialog', { name: 'Delete output' });
    await confirm.getByRole('button', { name: 'Delete' }).click();
    await eventually(
      async () => (await page.locator(`[data-output-id="${target.fileId}"]`).count()) === 0,
      'the tile is gone',
    );
    expect(await fileRepository.get(ctx.db, ws.id, target.fileId)).toBeNull();
    await eventually(
      () =>
        ctx.s3.send(new HeadObjectCommand({ Bucket: ctx.config.s3.bucket, Key: target.storageKey })).then(
          () => false,
          (e: { name?: string }) => e.name === 'NotFound',
        ),
      'the bytes are gone from S3',
    );
  });

  it('takes down the public copy of an output whose library entry expired, by its file id', async () => {
    const { page } = owner;
    const target = outputs[6]!;
    await ctx.db.file.update({ where: { id: target.fileId }, data: { expiresAt: new Date(Date.now() - 60_000) } });
    await page.goto(`/dashboard/w/${ws.id}/outputs`);
    await page.locator('[data-output-id]').first().waitFor();
    await expect(page.locator(`[data-output-id="${target.fileId}"]`).count()).resolves.toBe(0);

    await page.getByRole('button', { name: 'Take down a public copy' }).click();
    const dialog = page.getByRole('dialog', { name: 'Take down a public copy' });
    await dialog.getByLabel('File id').fill(target.fileId);
    await expectAccessible(page);
    await dialog.getByRole('button', { name: 'Take down' }).click();
    await page.getByRole('status').filter({ hasText: 'is taken down' }).waitFor();
    expect(await ctx.db.file.count({ where: { id: target.fileId } })).toBe(0);
    await expect(
      ctx.s3.send(new HeadObjectCommand({ Bucket: ctx.config.s3.bucket, Key: target.storageKey })),
    ).rejects.toMatchObject({ name: 'NotFound' });

    // Once gone, the edge says so in the dialog, and nothing else changes.
    await page.getByRole('button', { name: 'Take down a public copy' }).click();
    await dialog.getByLabel('File id').fill(target.fileId);
    await dialog.getByRole('button', { name: 'Take down' }).click();
    await dialog.getByRole('alert').filter({ hasText: 'No public copy' }).waitFor();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
  });

  it('sees the balance, each key’s spend and a chart of 30 days of spend split by model, then by key', async () => {
    const { page } = owner;
    await page.getByRole('link', { name: 'Usage' }).click();
    const bars = page.locator('svg.chart-svg rect.chart-bar');
    await eventually(async () => (await bars.count()) > 0, 'the chart has bars');
    const { balance } = await ctx.db.workspace.findUniqueOrThrow({ where: { id: ws.id } });
    await expect(page.getByTestId('balance').textContent()).resolves.toBe(USD(balance));
    await expect(page.getByText(USD(charged.total), { exact: true }).count()).resolves.toBe(1);
    // One bar segment per (day, model) charged, every day of the 30 inside the chart.
    expect(charged.entries).toBeGreaterThan(60);
    expect(await bars.count()).toBe(charged.entries);
    const legend = await page.getByRole('list', { name: 'Series' }).textContent();
    for (const model of ['sim/image-1', 'sim/video-1', 'sim/chat-1']) expect(legend).toContain(model);
    const heights = await bars.evaluateAll((rs) => rs.map((r) => Number(r.getAttribute('height'))));
    expect(Math.max(...heights)).toBeGreaterThan(100);
    await expect(page.locator('tr', { hasText: 'production' }).textContent()).resolves.toContain('$3.12');
    await expectAccessible(page);
    await screenshot(page, 'usage');

    await page.getByRole('radio', { name: 'By key' }).check();
    await eventually(
      async () => ((await page.getByRole('list', { name: 'Series' }).textContent()) ?? '').includes('staging ('),
      'the legend names the keys',
    );
    expect(await page.getByRole('list', { name: 'Series' }).textContent()).toContain('production (');
  });

  it('reveals the callback signing secret and redelivers a task’s callback', async () => {
    const { page } = owner;
    await page.getByRole('link', { name: 'Tasks' }).click();
    await page.getByRole('button', { name: 'Reveal secret' }).click();
    const revealed = await page.getByRole('textbox', { name: 'Signing secret' }).inputValue();
    expect(revealed).toMatch(/^whsec_/);
    await expectAccessible(page);
    await screenshot(page, 'tasks');
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await page
      .getByRole('dialog', { name: 'Rotate the signing secret' })
      .getByRole('button', { name: 'Rotate secret' })
      .click();
    await page.getByText('The previous secret still signs until').waitFor();
    const rotatedSecret = await page.getByRole('textbox', { name: 'Signing secret' }).inputValue();
    expect(rotatedSecret).toMatch(/^whsec_/);
    expect(rotatedSecret).not.toBe(revealed);
    expect(await callbackRepository.signingSecrets(ctx.db, ctx.secrets, ws.id, () => 'made on first read')).toEqual([
      rotatedSecret,
      revealed,
    ]);
    // Retired beside the rotate control: the overlap ends now and the current secret alone signs.
    await page.getByRole('button', { name: 'Retire previous secret' }).click();
    const retire = page.getByRole('dialog', { name: 'Retire the previous secret' });
    await expectAccessible(page);
    const retiredAnswer = page.waitForResponse((r) => r.url().endsWith('/callback-secret/retire-previous'));
    await retire.getByRole('button', { name: 'Retire previous secret' }).click();
    expect((await retiredAnswer).status()).toBe(200);
    await page.getByText('The previous secret no longer signs').waitFor();
    await expect(page.getByText('The previous secret still signs until').count()).resolves.toBe(0);
    await expect(page.getByRole('textbox', { name: 'Signing secret' }).inputValue()).resolves.toBe(rotatedSecret);
    expect(await callbackRepository.signingSecrets(ctx.db, ctx.secrets, ws.id, () => 'made on first read')).toEqual([
      rotatedSecret,
    ]);

    await page.getByRole('link', { name: deliveredTaskId }).click();
    const rows = page
      .locator('section', { has: page.getByRole('heading', { name: 'Callback attempts' }) })
      .locator('tbody tr');
    await eventually(async () => (await rows.count()) === 3, 'three attempts');
    await expect(rows.nth(0).textContent()).resolves.toContain('503');
    await expect(rows.nth(2).textContent()).resolves.toContain('200');
    await expectAccessible(page);
    await screenshot(page, 'task');
    const answered = page.waitForResponse((r) => r.url().endsWith(`/tasks/${deliveredTaskId}/redeliver`));
    await page.getByRole('button', { name: 'Redeliver' }).click();
    expect((await answered).status()).toBe(202);
    await page.getByText('A new delivery of the callback is queued.').waitFor();
  });

  it('recovers the deliveries parked in the last 24 hours, once', async () => {
    const { page } = owner;
    await page.getByRole('navigation', { name: 'Workspace' }).getByRole('link', { name: 'Tasks' }).click();
    await page.getByRole('button', { name: 'Recover parked deliveries' }).click();
    const dialog = page.getByRole('dialog', { name: 'Recover parked deliveries' });
    await expect(dialog.getByRole('combobox', { name: 'Parked since' }).inputValue()).resolves.toBe('24');
    await expectAccessible(page);
    const answered = page.waitForResponse((r) => r.url().endsWith('/callbacks/recover'));
    await dialog.getByRole('button', { name: 'Recover' }).click();
    expect((await answered).status()).toBe(200);
    await dialog.getByText('A new round started for 1 delivery.').waitFor();
    // The round starts after the five attempts made; the one parked three days ago stays parked.
    const task = (id: string) => ctx.db.task.findUniqueOrThrow({ where: { id } });
    expect((await task(parkedTaskId)).callbackRoundStart).toBe(6);
    expect(await task(oldParkedTaskId)).toMatchObject({ callbackState: 'parked', callbackRoundStart: 1 });
    // Again: nothing parked in the period is left.
    await dialog.getByRole('button', { name: 'Recover' }).click();
    await dialog.getByText('No parked delivery in this period: nothing to recover.').waitFor();
    expect((await task(parkedTaskId)).callbackRoundStart).toBe(6);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
  });

  it("sends a signed test callback and shows the receiver's status, latency and first bytes", async () => {
    const { page } = owner;
    await page.getByRole('button', { name: 'Send a test callback' }).click();
    const dialog = page.getByRole('dialog', { name: 'Send a test callback' });
    await dialog.getByRole('textbox', { name: 'Receiver URL' }).fill(`${receiver.url}/e2e-test`);
    const answered = page.waitForResponse((r) => r.url().endsWith('/callbacks/test'));
    await dialog.getByRole('button', { name: 'Send' }).click();
    expect((await answered).status()).toBe(200);
    const result = dialog.getByRole('status', { name: 'Test callback result' });
    await result.getByText(/HTTP 201 in \d+ ms/).waitFor();
    await expect(result.textContent()).resolves.toContain('{"received":true}');
    await expectAccessible(page);
    // What arrived is signed with the workspace's current secret, by the spec's recipe.
    const arrival = received.find((r) => r.path === '/e2e-test')!;
    const [secret] = await callbackRepository.signingSecrets(ctx.db, ctx.secrets, ws.id, () => 'unused');
    const t = Number(arrival.headers['webhook-timestamp']);
    const v1 = createHmac('sha256', secret!).update(`${t}.`).update(arrival.body).digest('hex');
    expect(arrival.headers['svc-signature']).toBe(`t=${t},v1=${v1}`);
    const sampleId = JSON.parse(arrival.body.toString()).task_id;
    expect(sampleId).toMatch(/^tsk_sample/);
    await expect(result.textContent()).resolves.toContain(sampleId);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
  });

  it('switches workspace, the workspace in the URL', async () => {
    const { page } = owner;
    await page.getByRole('combobox', { name: 'Workspace' }).selectOption(otherWs.id);
    await page.waitForURL(`**/dashboard/w/${otherWs.id}/tasks`);
    await page.getByText('No tasks').waitFor();
  });

  it('is sent to sign-in when the session ends under an open page, and comes back after signing in', async () => {
    const { page } = owner;
    const me = await ctx.db.user.findUniqueOrThrow({ where: { email: OWNER.email } });
    await ctx.db.session.updateMany({ where: { userId: me.id, revokedAt: null }, data: { revokedAt: new Date() } });
    await page.getByRole('link', { name: 'Members' }).click();
    await page.waitForURL(/\/dashboard\/sign-in\?next=/);
    expect(new URL(page.url()).searchParams.get('next')).toBe(`/dashboard/w/${otherWs.id}/members`);
    await signIn(page, OWNER);
    await page.waitForURL(`**/dashboard/w/${otherWs.id}/members`);
    await page.getByRole('heading', { name: 'Members', level: 1 }).waitFor();
  });

  it('signs out; a deep link then goes through sign-in and back to where it pointed', async () => {
    const { page } = owner;
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/dashboard\/sign-in/);
    await page.goto(`/dashboard/w/${ws.id}/keys`);
    await page.waitForURL(/\/dashboard\/sign-in\?next=/);
    await signIn(page, OWNER);
    await page.waitForURL(`**/dashboard/w/${ws.id}/keys`);
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
  });
});

describe('what the edge serves', () => {
  it('keeps the first load (JS + CSS, gzipped) within 250 KB, with hashed assets cached for a year', async () => {
    const html = await (await fetch(`${edge.url}/dashboard/`)).text();
    const assets = [...html.matchAll(/(?:src|href)="(\/dashboard\/assets\/[^"]+\.(?:js|css))"/g)].map((m) => m[1]!);
    expect(assets.some((a) => a.endsWith('.js'))).toBe(true);
    expect(assets.some((a) => a.endsWith('.css'))).toBe(true);
    let gzipped = 0;
    for (const a of assets) {
      const res = await fetch(`${edge.url}${a}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      gzipped += gzipSync(Buffer.from(await res.arrayBuffer()), { level: 9 }).length;
    }
    process.stderr.write(`dashboard first load: ${(gzipped / 1024).toFixed(1)} KB gzipped (${assets.join(', ')})\n`);
    expect(gzipped).toBeLessThanOrEqual(250 * 1024);
    // No inline script anywhere in the page the CSP guards.
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
  });
});

describe('opened by another host name than PUBLIC_BASE_URL (a proxy in front, or 127.0.0.1 for localhost)', () => {
  const HOST = 'dashboard.proxy.test';
  let proxied: Browser;

  beforeAll(async () => {
    // The browser reaches the edge as HOST, as it would through a proxy that keeps the Host header.
    proxied = await launchChromium([`--host-resolver-rules=MAP ${HOST} 127.0.0.1`]);
  });
  afterAll(() => proxied?.close());

  it('signs in and loads every preview from its own origin under the CSP', async () => {
    const origin = edge.url.replace('127.0.0.1', HOST);
    expect(new URL(origin).origin).not.toBe(new URL(edge.deps.config.publicBaseUrl).origin);
    const context = await proxied.newContext({ baseURL: origin, viewport: { width: 1280, height: 800 } });
    try {
      context.setDefaultTimeout(8_000);
      const page = await context.newPage();
      const problems = watchPage(page);
      await page.goto(`/dashboard/w/${ws.id}/outputs`);
      await page.waitForURL(/\/dashboard\/sign-in\?next=/);
      await signIn(page, OWNER);
      await page.waitForURL(`**/dashboard/w/${ws.id}/outputs`);
      const thumbs = page.locator('img.thumb');
      await eventually(async () => (await thumbs.count()) >= 6, 'the thumbnails');
      await eventually(
        () =>
          thumbs.evaluateAll((imgs) =>
            imgs.every((i) => (i as HTMLImageElement).complete && (i as HTMLImageElement).naturalWidth > 0),
          ),
        'every thumbnail decodes',
      );
      const sources = await thumbs.evaluateAll((imgs) => imgs.map((i) => (i as HTMLImageElement).currentSrc));
      expect(sources.every((s) => s.startsWith(`${origin}/api/v1/files/`))).toBe(true);

      await page.locator('[data-output-id]').first().click();
      const pane = page.getByRole('complementary', { name: 'Preview' });
      const large = pane.locator('img');
      await eventually(
        () => large.evaluate((i) => (i as HTMLImageElement).complete && (i as HTMLImageElement).naturalWidth > 0),
        'the preview decodes',
      );
      const href = await pane.getByRole('link', { name: 'Download' }).evaluate((a) => (a as HTMLAnchorElement).href);
      expect(href.startsWith(`${origin}/api/v1/files/`)).toBe(true);
      // The page's own fetch, under its CSP (connect-src 'self'), as following the link does.
      expect(await page.evaluate(async (u) => (await fetch(u)).status, href)).toBe(200);
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
