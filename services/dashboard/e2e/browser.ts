// Debian's Chromium driven by playwright-core (never a browser download), axe-core injected into each page, and
// screenshots for the README.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { palettePng } from './png';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const REPO_ROOT = resolve(__dirname, '..', '..', '..');
const SCREENSHOTS = join(REPO_ROOT, 'docs', 'screenshots');

/** Flags from NOTES-deps.md: without the background-networking ones Chromium floods the closed network. */
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** `extraArgs`: more Chromium flags, such as `--host-resolver-rules` to reach the edge by another host name. */
export async function launchChromium(extraArgs: readonly string[] = []): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: npm test installs it with apt-get when run as root; otherwise run \`apt-get install ` +
        `-y --no-install-recommends chromium\` (or set CHROMIUM_PATH).`,
    );
  }
  return chromium.launch({ executablePath: CHROMIUM, args: [...FLAGS, ...extraArgs] });
}

/**
 * Builds the dashboard if its sources changed since the last build (the digest in scripts/build.mjs), as npm test does.
 */
export function ensureBuilt() {
  const r = spawnSync(
    process.execPath,
    ['--input-type=module', '-e', "import('./scripts/build.mjs').then((m) => m.buildDashboard())"],
    { cwd: REPO_ROOT, encoding: 'utf8' },
  );
  if (r.status !== 0) throw new Error(`building the dashboard failed:\n${r.stderr}`);
  return r.stderr.trim();
}

/**
 * What went wrong in the page that the page itself cannot report: uncaught exceptions and Content-Security-Policy
 * refusals (an inline script or style, a source not allowed). A failed fetch (401 while signed out) is not one.
 */
export function watchPage(page: Page): string[] {
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`uncaught: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && /Content Security Policy/i.test(m.text())) problems.push(`csp: ${m.text()}`);
  });
  return problems;
}

const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/**
 * axe-core's serious and critical violations on the page as it is now. It is evaluated through the DevTools
 * protocol, which the page's CSP (script-src 'self') does not govern, so the policy under test stays on.
 */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(`if (!window.axe) { ${AXE_SOURCE}\n }`);
  const violations = await page.evaluate(async () => {
    const axe = (
      window as unknown as {
        axe: {
          run: (
            ctx: Document,
            opts: object,
          ) => Promise<{
            violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }[];
          }>;
        };
      }
    ).axe;
    const r = await axe.run(document, {
      resultTypes: ['violations'],
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
    });
    return r.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => JSON.stringify(n.target)),
    }));
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/** A 1280×800 screenshot into docs/screenshots/<name>.png, reduced to a 256-colour palette (README-sized files). */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const file = join(SCREENSHOTS, `${name}.png`);
  writeFileSync(file, palettePng(await page.screenshot({ type: 'png', animations: 'disabled', caret: 'hide' })));
  return file;
}
