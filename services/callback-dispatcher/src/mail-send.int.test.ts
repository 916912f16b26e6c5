// mail.send with a real worker on a real queue, real Postgres and Redis and a real SMTP server (global setup's): the
// job re-reads its row, remakes the link from it, and sends nothing for a row that is used, gone or superseded.
import { linkToken } from '@gensvc/auth';
import { invitationRepository, newId, passwordResetRepository } from '@gensvc/db';
import { createMailer, type Mailer } from '@gensvc/mail';
import { createLogger } from '@gensvc/observability';
import { closeWorkers, createQueues, scheduleMail, type Queues } from '@gensvc/queue';
import { awaitMail, eventually, linkIn, mailTo, makeMember, makeWorkspace, useTestContext } from '@gensvc/testing';
import type { Worker } from 'bullmq';
import { startMailWorker } from './mail-worker';

const PUBLIC_BASE_URL = 'https://app.gensvc.test';
const ctx = useTestContext({ PUBLIC_BASE_URL });
let queues: Queues;
let worker: Worker;
let mailer: Mailer;

beforeAll(async () => {
  queues = createQueues({ connection: ctx.redis, prefix: ctx.config.queuePrefix });
  mailer = createMailer({ smtpUrl: ctx.config.mail.smtpUrl!, from: ctx.config.mail.from });
  const logger = createLogger({ service: 'test', level: 'silent' });
  worker = startMailWorker(
    { config: ctx.config, db: ctx.db, mailer, logger },
    { connection: ctx.redis, prefix: ctx.config.queuePrefix },
  );
  await worker.waitUntilReady();
});
afterAll(async () => {
  await closeWorkers([worker], 5_000);
  mailer.close();
  await queues.close();
});

/** Every mail job added so far has run (none waits, runs or waits for a retry). */
const idle = () =>
  eventually(
    async () =>
      Object.values(await queues.get('mail').getJobCounts('wait', 'active', 'delayed', 'prioritized')).every(
        (n) => n === 0,
      ),
    'the mail queue to be idle',
    15_000,
  );

async function invitation(email: string) {
  const ws = await makeWorkspace(ctx.db, { name: 'Orbit' });
  const { user } = await makeMember(ctx.db, ws.id, 'owner', { name: 'Ada' });
  const id = newId('inv');
  const inv = await invitationRepository.create(ctx.db, {
    id,
    workspaceId: ws.id,
    email,
    role: 'admin',
    tokenHash: linkToken(ctx.config.signingSecret, 'invitation', id, 1).hash,
    invitedById: user.id,
  });
  return { ws, inv };
}

it('mails a live invitation its link, remade from the row', async () => {
  const to = `inv-${Date.now()}@example.com`;
  const { inv } = await invitation(to);
  await scheduleMail(queues, { kind: 'invitation', id: inv.id, send: 1 });
  const mail = await awaitMail(to);
  expect(mail.subject).toBe('You are invited to "Orbit" on gensvc');
  expect(mail.text).toContain('Ada invited you to join the workspace "Orbit" on gensvc as admin.');
  const link = linkIn(mail, `${PUBLIC_BASE_URL}/dashboard/invite/`);
  expect(link.split('/').pop()).toBe(linkToken(ctx.config.signingSecret, 'invitation', inv.id, 1).token);
});

it('sends nothing for an invitation accepted, revoked or resent since the job was made', async () => {
  const [accepted, revoked, resent] = [
    `a-${Date.now()}@example.com`,
    `r-${Date.now()}@example.com`,
    `s-${Date.now()}@example.com`,
  ];
  const a = await invitation(accepted);
  await invitationRepository.markAccepted(ctx.db, a.inv.id);
  const r = await invitation(revoked);
  await invitationRepository.remove(ctx.db, r.ws.id, r.inv.id);
  const s = await invitation(resent);
  await invitationRepository.resend(
    ctx.db,
    s.ws.id,
    s.inv.id,
    (n) => linkToken(ctx.config.signingSecret, 'invitation', s.inv.id, n).hash,
  );
  for (const inv of [a.inv, r.inv, s.inv]) await scheduleMail(queues, { kind: 'invitation', id: inv.id, send: 1 });
  await idle();
  for (const to of [accepted, revoked, resent]) expect({ to, mails: await mailTo(to) }).toEqual({ to, mails: [] });
  // The resend's own job sends its link.
  await scheduleMail(queues, { kind: 'invitation', id: s.inv.id, send: 2 });
  const link = linkIn(await awaitMail(resent), PUBLIC_BASE_URL);
  expect(link.split('/').pop()).toBe(linkToken(ctx.config.signingSecret, 'invitation', s.inv.id, 2).token);
});

it('mails a reset link to its account, and nothing for a used one or one made for no account', async () => {
  const ws = await makeWorkspace(ctx.db);
  const { user, email } = await makeMember(ctx.db, ws.id, 'member');
  const hashFor = (id: string) => linkToken(ctx.config.signingSecret, 'password-reset', id).hash;
  const used = await passwordResetRepository.create(ctx.db, user.id, hashFor);
  await passwordResetRepository.use(ctx.db, used.id, user.id, 'scrypt$1$1$1$x$y');
  const userless = await passwordResetRepository.create(ctx.db, null, hashFor);
  for (const id of [used.id, userless.id]) await scheduleMail(queues, { kind: 'password-reset', id, send: 1 });
  await idle();
  expect(await mailTo(email)).toEqual([]);

  const live = await passwordResetRepository.create(ctx.db, user.id, hashFor);
  await scheduleMail(queues, { kind: 'password-reset', id: live.id, send: 1 });
  const link = linkIn(await awaitMail(email), `${PUBLIC_BASE_URL}/dashboard/reset-password/`);
  expect(link.split('/').pop()).toBe(linkToken(ctx.config.signingSecret, 'password-reset', live.id).token);
});
