// What gensvc mails, as plain text and as HTML with the same words. Every value from a person (a workspace's name,
// an inviter's name) is escaped in the HTML, and no line of the text carries anything but the link on its own.
import type { MailMessage } from './mailer';

/** Text as HTML shows it: the five characters HTML gives a meaning escaped. */
export const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** A name as a mail header or line shows it: control characters and line breaks out, at most 100 characters. */
const oneLine = (s: string) =>
  s
    .replace(/[\p{Cc}\u2028\u2029]+/gu, ' ')
    .trim()
    .slice(0, 100);

function page(paragraphs: string[], link: { href: string; label: string }): string {
  const ps = paragraphs.map((p) => `<p>${escapeHtml(p)}</p>`).join('\n');
  const href = escapeHtml(link.href);
  return (
    `<!doctype html>\n<html><body style="font-family: sans-serif; line-height: 1.5">\n${ps}\n` +
    `<p><a href="${href}">${escapeHtml(link.label)}</a></p>\n<p style="color: #666">${href}</p>\n</body></html>\n`
  );
}

export interface InvitationMail {
  to: string;
  workspaceName: string;
  role: string;
  /** Who invited, as the workspace knows them (a name, else their address); null when the CLI did. */
  inviter: string | null;
  link: string;
  expiresAt: Date;
}

export function invitationMail(m: InvitationMail): MailMessage {
  const workspace = oneLine(m.workspaceName);
  const who = m.inviter ? oneLine(m.inviter) : 'Someone';
  const lines = [
    `${who} invited you to join the workspace "${workspace}" on gensvc as ${m.role}.`,
    `The link works once, until ${m.expiresAt.toUTCString()}. If you did not expect it, ignore this mail.`,
  ];
  return {
    to: m.to,
    subject: `You are invited to "${workspace}" on gensvc`,
    text: `${lines[0]}\n\nAccept the invitation:\n${m.link}\n\n${lines[1]}\n`,
    html: page(lines, { href: m.link, label: 'Accept the invitation' }),
  };
}

export interface PasswordResetMail {
  to: string;
  link: string;
  expiresAt: Date;
}

export function passwordResetMail(m: PasswordResetMail): MailMessage {
  const lines = [
    'Someone asked to set a new password for your gensvc account.',
    `The link works once, until ${m.expiresAt.toUTCString()}; setting a password signs you out everywhere. ` +
      'If it was not you, ignore this mail: your password stays as it is.',
  ];
  return {
    to: m.to,
    subject: 'Set a new gensvc password',
    text: `${lines[0]}\n\nSet a new password:\n${m.link}\n\n${lines[1]}\n`,
    html: page(lines, { href: m.link, label: 'Set a new password' }),
  };
}
