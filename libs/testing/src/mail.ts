// What the code under test mailed: global-setup's SMTP server keeps every message, and its inbox answers by
// recipient. Test files share that server, so each reads only the messages to the addresses it made.
import type { CaughtMail } from '@gensvc/local-stack';
import type { TestContext } from './context';
import { eventually } from './eventually';
import { spawnService, waitForOutput, type ServiceProcess } from './processes';

function inboxUrl(): string {
  const url = process.env.GENSVC_TEST_MAIL_INBOX;
  if (!url) throw new Error('GENSVC_TEST_MAIL_INBOX is not set: run the tests with npm test (jest global setup).');
  return url;
}

/** Every message received so far for `to`, oldest first. */
export async function mailTo(to: string): Promise<CaughtMail[]> {
  const res = await fetch(`${inboxUrl()}api/messages?to=${encodeURIComponent(to.toLowerCase())}`);
  if (!res.ok) throw new Error(`mail inbox answered ${res.status}`);
  return ((await res.json()) as { data: CaughtMail[] }).data;
}

/**
 * Waits for the `count`-th message to `to` (the first by default) and returns it: earlier ones are skipped, so a
 * test that expects a second mail (a resend) asks for count 2.
 */
export async function awaitMail(to: string, opts: { count?: number; timeoutMs?: number } = {}): Promise<CaughtMail> {
  const count = opts.count ?? 1;
  return eventually(async () => (await mailTo(to))[count - 1], `mail #${count} to ${to}`, opts.timeoutMs ?? 15_000, 50);
}

/** The first https or http link in a message's text that starts with `prefix`. */
export function linkIn(mail: CaughtMail, prefix: string): string {
  const link = mail.text.split(/\s+/).find((word) => word.startsWith(prefix));
  if (!link) throw new Error(`no link starting with ${prefix} in the mail "${mail.subject}":\n${mail.text}`);
  return link;
}

/**
 * The process that sends the mail (the built callback-dispatcher) on the test's stores and queue prefix, sending to
 * global-setup's SMTP server; stop() it in afterAll.
 */
export async function startMailSender(ctx: TestContext): Promise<ServiceProcess> {
  const proc = spawnService('callback-dispatcher', { ...ctx.env, LOG_LEVEL: 'info' });
  await waitForOutput(proc, 'callback dispatcher started');
  return proc;
}
