// The Projects page in a real browser (Debian's Chromium through playwright-core) against the real edge over a
// socket, with real Postgres, Redis and S3: a member makes a project, adds an output and an upload to it from the
// Outputs page, sees them kept and removes one; an owner deletes the project and its files stay. axe-core checks each
// page, and the project's page is the README's screenshot.
import { fileRepository, projectRepository } from '@gensvc/db';
import { eventually, useTestContext } from '@gensvc/testing';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startEdge, type EdgeUnderTest } from '../../edge/src/edge-under-test';
import { axeViolations, ensureBuilt, launchChromium, screenshot, watchPage } from './browser';
import { addMember, makeKey, makeOutput, makeUpload, makeUser, makeWorkspace, type SeededOutput } from './seed';

jest.setTimeout(120_000);

// biome-ignore lint/correctness/useHookAtTopLevel: a jest set-up helper named like a hook, not a React hook
const ctx = useTestContext();
let edge: EdgeUnderTest;
let browser: Browser;

const OWNER = { email: 'olivia.owner@example.com', password: 'correct horse battery staple', name: 'Olivia Owner' };
const MEMBER = { email: 'grace.hopper@example.com', password: 'another long password', name: 'Grace Hopper' };
let ws: { id: string };
const outputs: SeededOutput[] = [];
const uploadName = 'style-guide.png';
let uploadId = '';

beforeAll(async () => {
  ensureBuilt();
  edge = await startEdge(ctx);
  browser = await launchChromium();
  ws = await makeWorkspace(ctx.db, { name: 'Acme Studio' });
  const owner = await makeUser(ctx.db, OWNER.email, OWNER.password, OWNER.name);
  await addMember(ctx.db, ws.id, owner.id, 'owner');
  const member = await makeUser(ctx.db, MEMBER.email, MEMBER.password, MEMBER.name);
  await addMember(ctx.db, ws.id, member.id, 'member');
  const { key } = await makeKey(ctx.db, ws.id, { name: 'production' });
  const prompts = ['sneaker on white, studio light', 'sneaker, side view', 'sneaker sole detail', 'box and sneaker'];
  for (let i = 0; i < 6; i++)
    outputs.push(
      await makeOutput(ctx, ws.id, key.id, {
        prompt: `${prompts[i % prompts.length]} #${6 - i}`,
        model: 'sim/image-1',
        kind: 'image',
        index: i,
        ageMinutes: i * 45,
      }),
    );
  uploadId = await makeUpload(ctx, ws.id, uploadName);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await edge?.close();
});

async function signedIn(who: { email: string; password: string }) {
  const context: BrowserContext = await browser.newContext({
    baseURL: edge.url,
    viewport: { width: 1280, height: 800 },
    deviceScaleFactor: 1,
    reducedMotion: 'reduce',
  });
  context.setDefaultTimeout(8_000);
  const page = await context.newPage();
  const problems = watchPage(page);
  await page.goto('/dashboard/sign-in');
  await page.getByLabel('Email address').fill(who.email);
  await page.getByLabel('Password').fill(who.password);
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.waitForURL(`**/dashboard/w/${ws.id}/outputs`);
  return { context, page, problems };
}

async function expectAccessible(page: Page) {
  expect(await axeViolations(page)).toEqual([]);
}

const thumbsDecoded = (page: Page, n: number) =>
  eventually(
    () =>
      page
        .locator('ul.grid img.thumb')
        .evaluateAll(
          (imgs, n) =>
            imgs.length === n &&
            imgs.every((i) => (i as HTMLImageElement).complete && (i as HTMLImageElement).naturalWidth > 0),
          n,
        ),
    `${n} thumbnails decode`,
  );

let projectId = '';

describe('a member', () => {
  let member: Awaited<ReturnType<typeof signedIn>>;
  beforeAll(async () => {
    member = await signedIn(MEMBER);
  });
  afterAll(() => member.context.close());
  afterEach(() => expect(member.problems).toEqual([]));

  it('makes a project from the Projects page', async () => {
    const { page } = member;
    await page.getByRole('link', { name: 'Projects', exact: true }).click();
    await page.getByText('No projects yet', { exact: true }).waitFor();
    await expectAccessible(page);
    await page.getByRole('button', { name: 'New project' }).click();
    const dialog = page.getByRole('dialog', { name: 'New project' });
    await dialog.getByLabel('Name').fill('Spring campaign');
    await dialog.getByLabel('Description').fill('Sneaker shots for the launch');
    await dialog.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('heading', { name: 'Spring campaign' }).waitFor();
    await page.getByText('No files in this project', { exact: true }).waitFor();
    projectId = page.url().split('/').pop()!;
    expect(projectId).toMatch(/^proj_/);
    await expect(page.getByRole('button', { name: 'Delete project' }).count()).resolves.toBe(0);
    await expectAccessible(page);
  });

  it('adds an output and an upload from the Outputs page; each then shows it is kept', async () => {
    const { page } = member;
    await page.getByRole('link', { name: 'Outputs', exact: true }).click();
    const first = outputs[0]!;
    await page.locator(`[data-output-id="${first.fileId}"]`).click();
    const pane = page.getByRole('complementary', { name: 'Preview' });
    await pane.getByText(first.prompt).waitFor();
    const goes = (await fileRepository.get(ctx.db, ws.id, first.fileId))!.expiresAt!;
    expect(await pane.locator('.file-expiry').textContent()).toMatch(/^Goes on /);
    await pane.getByRole('button', { name: 'Add to project' }).click();
    const dialog = page.getByRole('dialog', { name: 'Add to project' });
    await expect(dialog.getByLabel('Project').inputValue()).resolves.toBe(projectId);
    await expectAccessible(page);
    await dialog.getByRole('button', { name: 'Add' }).click();
    await page.getByRole('status').getByText('is added to Spring campaign').waitFor();
    await eventually(
      async () => (await pane.locator('.file-expiry').textContent()) === 'Kept by a project',
      'the pane to say the file is kept',
    );
    expect(goes.getTime()).toBeGreaterThan(Date.now());
    expect((await fileRepository.get(ctx.db, ws.id, first.fileId))!.expiresAt).toBeNull();

    await page.getByRole('tab', { name: 'Uploads' }).click();
    await page.locator(`[data-output-id="${uploadId}"]`).click();
    await pane.getByRole('button', { name: 'Add to project' }).click();
    await dialog.getByRole('button', { name: 'Add' }).click();
    await eventually(
      async () => (await pane.locator('.file-expiry').textContent()) === 'Kept by a project',
      'the upload to be kept',
    );
  });

  it('opens the project as a grid of its files with previews, removes one and is told when it goes', async () => {
    const { page } = member;
    await page.getByRole('link', { name: 'Projects', exact: true }).click();
    const row = page.locator(`[data-project-id="${projectId}"]`);
    await expect(row.locator('td').nth(1).textContent()).resolves.toBe('2');
    await row.getByRole('link', { name: 'Spring campaign' }).click();
    await thumbsDecoded(page, 2);
    await expectAccessible(page);
    await page.getByRole('button', { name: `Remove ${uploadName} from the project` }).click();
    await page
      .getByRole('status')
      .getByText(/Unless another project keeps it, it goes on /)
      .waitFor();
    await eventually(async () => (await page.locator('[data-output-id]').count()) === 1, 'one file left');
    expect((await fileRepository.get(ctx.db, ws.id, uploadId))!.expiresAt).not.toBeNull();
    // Deleting the project is not a member's to do, asked of the JSON route straight either.
    const refused = await page.evaluate(async (path) => {
      const csrf =
        document.cookie
          .split('; ')
          .find((c) => c.startsWith('gsvc_csrf='))
          ?.slice(10) ?? '';
      return (await fetch(path, { method: 'DELETE', headers: { 'X-CSRF-Token': csrf } })).status;
    }, `/api/v1/dashboard/workspaces/${ws.id}/projects/${projectId}`);
    expect(refused).toBe(403);
  });
});

describe('an owner', () => {
  it('sees the project, and deletes it: its files stay', async () => {
    // Three more outputs in the project, for a grid worth a screenshot.
    for (const o of outputs.slice(1, 4)) await projectRepository.attach(ctx.db, ws.id, projectId, o.fileId);
    const owner = await signedIn(OWNER);
    try {
      const { page } = owner;
      await page.goto(`/dashboard/w/${ws.id}/projects/${projectId}`);
      await thumbsDecoded(page, 4);
      await page.getByText('4 files, kept while here').waitFor();
      await expectAccessible(page);
      await screenshot(page, 'projects');
      await page.getByRole('button', { name: 'Delete project' }).click();
      const confirm = page.getByRole('dialog', { name: 'Delete project' });
      await confirm.getByRole('button', { name: 'Delete project' }).click();
      await page.getByText('No projects yet', { exact: true }).waitFor();
      for (const o of outputs.slice(0, 4)) {
        const file = await fileRepository.get(ctx.db, ws.id, o.fileId);
        expect(file?.expiresAt).toBeInstanceOf(Date);
      }
      expect(owner.problems).toEqual([]);
    } finally {
      await owner.context.close();
    }
  });
});
