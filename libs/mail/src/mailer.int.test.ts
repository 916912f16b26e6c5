// Through a real SMTP server (jest global setup's): what the mailer hands over arrives as sent, text and HTML.
import { randomBytes } from 'node:crypto';
import { awaitMail } from '@gensvc/testing';
import { SMTPServer } from 'smtp-server';
import { createMailer, invitationMail, isPermanentSmtpFailure, passwordResetMail } from './index';

const address = () => `mail-${randomBytes(6).toString('hex')}@example.com`;

it('delivers an invitation with its link, escaping what a person wrote', async () => {
  const mailer = createMailer({ smtpUrl: process.env.SMTP_URL!, from: 'gensvc <no-reply@example.com>' });
  const to = address();
  const link = 'http://localhost:8080/dashboard/invite/abc_DEF-123';
  try {
    await mailer.send(
      invitationMail({
        to,
        workspaceName: 'Acme <script>alert(1)</script>\r\nBcc: x@example.com',
        role: 'admin',
        inviter: 'Ada',
        link,
        expiresAt: new Date('2030-01-01T00:00:00Z'),
      }),
    );
  } finally {
    mailer.close();
  }
  const mail = await awaitMail(to);
  expect(mail.from).toBe('no-reply@example.com');
  expect(mail.to).toEqual([to]);
  expect(mail.subject).toBe('You are invited to "Acme <script>alert(1)</script> Bcc: x@example.com" on gensvc');
  expect(mail.text.split('\n')).toContain(link);
  expect(mail.text).toContain('Ada invited you');
  expect(mail.html).toContain(`<a href="${link}">`);
  expect(mail.html).not.toContain('<script>');
  expect(mail.html).toContain('&lt;script&gt;');

  // The local inbox (npm start's) lists it and shows it, escaped, its link clickable.
  const inbox = process.env.GENSVC_TEST_MAIL_INBOX!;
  const list = await (await fetch(inbox)).text();
  expect(list).toContain(`<a href="/messages/${mail.id}">`);
  expect(list).not.toContain('<script>alert(1)</script>');
  const shown = await fetch(`${inbox}messages/${mail.id}`);
  expect(shown.headers.get('content-type')).toMatch(/^text\/html/);
  const page = await shown.text();
  expect(page).toContain(`<a href="${link}">${link}</a>`);
  expect(page).not.toContain('<script>alert(1)</script>');
  expect((await fetch(`${inbox}messages/999999999`)).status).toBe(404);
});

it('delivers a password-reset mail, and says no to a server that is not there', async () => {
  const to = address();
  const mailer = createMailer({ smtpUrl: process.env.SMTP_URL!, from: 'no-reply@example.com' });
  const link = 'http://localhost:8080/dashboard/reset-password/xyz';
  try {
    expect(await mailer.verify()).toBe(true);
    await mailer.send(passwordResetMail({ to, link, expiresAt: new Date('2030-01-01T00:00:00Z') }));
  } finally {
    mailer.close();
  }
  const mail = await awaitMail(to);
  expect(mail.subject).toBe('Set a new gensvc password');
  expect(mail.text.split('\n')).toContain(link);

  const nowhere = createMailer({ smtpUrl: 'smtp://127.0.0.1:1', from: 'no-reply@example.com' });
  try {
    expect(await nowhere.verify()).toBe(false);
    await expect(nowhere.send(passwordResetMail({ to, link, expiresAt: new Date() }))).rejects.toThrow();
  } finally {
    nowhere.close();
  }
});

it("tells a server's refusal for good (5xx) from one for now (4xx)", async () => {
  // A server that refuses one recipient for good and another for now, as real ones do.
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onRcptTo(address, _session, callback) {
      const refusal = address.address.startsWith('gone')
        ? Object.assign(new Error('No such mailbox'), { responseCode: 550 })
        : Object.assign(new Error('Try again later'), { responseCode: 451 });
      callback(refusal);
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as { port: number };
  const mailer = createMailer({ smtpUrl: `smtp://127.0.0.1:${port}`, from: 'no-reply@example.com' });
  const attempt = (to: string) =>
    mailer.send(passwordResetMail({ to, link: 'http://x/y', expiresAt: new Date() })).then(
      () => null,
      (e: unknown) => e,
    );
  try {
    const gone = await attempt('gone@example.com');
    const later = await attempt('later@example.com');
    expect([isPermanentSmtpFailure(gone), isPermanentSmtpFailure(later)]).toEqual([true, false]);
    expect(later).toBeInstanceOf(Error);
  } finally {
    mailer.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});
