// GET /docs in Debian's Chromium against the real edge: Swagger UI (from the swagger-ui-dist package, served by the
// edge) renders every operation of /openapi.json, and no request leaves the edge's 127.0.0.1 origin.
import { useTestContext } from '@gensvc/testing';
import type { Browser } from 'playwright-core';
import { startEdge, type EdgeUnderTest } from '../../edge/src/edge-under-test';
import { launchChromium, screenshot, watchPage } from './browser';

jest.setTimeout(120_000);

// biome-ignore lint/correctness/useHookAtTopLevel: a jest set-up helper named like a hook, not a React hook
const ctx = useTestContext();
let edge: EdgeUnderTest;
let browser: Browser;

beforeAll(async () => {
  edge = await startEdge(ctx);
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await edge?.close();
});

it('renders every operation and the callback webhook, loading nothing from another origin', async () => {
  const doc = (await (await fetch(`${edge.url}/openapi.json`)).json()) as {
    paths: Record<string, Record<string, { summary: string }>>;
  };
  const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
  );
  expect(operations.length).toBeGreaterThan(30);

  const context = await browser.newContext();
  const requested: string[] = [];
  const foreign: string[] = [];
  // Every request the page makes is seen here; one to any other origin is refused and recorded.
  await context.route('**/*', (route) => {
    const url = route.request().url();
    requested.push(url);
    if (new URL(url).origin !== edge.url) {
      foreign.push(url);
      return route.abort();
    }
    return route.continue();
  });
  const page = await context.newPage();
  const problems = watchPage(page);
  const res = await page.goto(`${edge.url}/docs`);
  expect(res?.status()).toBe(200);
  await page.waitForSelector('.opblock', { timeout: 60_000 });

  const shown = await page.$$eval('.opblock', (blocks) =>
    blocks.map((b) => {
      const method = b.querySelector('.opblock-summary-method')?.textContent?.trim();
      return `${method} ${b.querySelector('.opblock-summary-path')?.getAttribute('data-path')}`;
    }),
  );
  const documented = new Set(operations);
  // Swagger UI shows each path operation once, and webhooks beside them.
  expect(shown.filter((s) => documented.has(s)).sort()).toEqual([...documented].sort());
  expect(await page.textContent('body')).toContain('taskCallback');
  expect(await page.textContent('.info .title')).toContain('gensvc API');

  expect(foreign).toEqual([]);
  expect(requested.every((u) => u.startsWith('http://127.0.0.1:'))).toBe(true);
  expect(requested).toEqual(
    expect.arrayContaining([
      `${edge.url}/docs`,
      `${edge.url}/openapi.json`,
      `${edge.url}/docs/assets/swagger-ui-bundle.js`,
    ]),
  );
  expect(problems).toEqual([]);
  await page.setViewportSize({ width: 1280, height: 900 });
  await screenshot(page, 'api-docs');
  await context.close();
});
