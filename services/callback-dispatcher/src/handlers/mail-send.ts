// mail.send: one invitation or password-reset mail. The payload names the row; the link is remade from it
// (@gensvc/auth linkToken) and checked against the row's stored hash, so a job for a row that is gone, used, expired
// or superseded by a resend sends nothing. SMTP's temporary failures (a server away, a 4xx) are retried as the
// contract says; a 5xx refusal is final. A run that dies after the server accepted the message sends it again.
import { linkToken } from '@gensvc/auth';
import type { Config } from '@gensvc/config';
import type { JobPayload, MailSend } from '@gensvc/contracts';
import { invitationRepository, passwordResetRepository, type Db } from '@gensvc/db';
import { invitationMail, isPermanentSmtpFailure, passwordResetMail, type Mailer, type MailMessage } from '@gensvc/mail';
import type { Logger } from '@gensvc/observability';
import { UnrecoverableError } from 'bullmq';

export interface MailDeps {
  config: Pick<Config, 'publicBaseUrl' | 'signingSecret'>;
  db: Db;
  mailer: Pick<Mailer, 'send'>;
  logger: Logger;
}

/** Reset mails to one account per hour: a stream of requests for an address cannot flood its inbox. */
const RESET_MAILS_PER_HOUR = 3;

type Payload = JobPayload<typeof MailSend>;

async function invitationMessage(deps: MailDeps, p: Payload, now: Date): Promise<MailMessage | null> {
  const inv = await invitationRepository.forMail(deps.db, p.id);
  if (!inv || inv.acceptedAt || inv.expiresAt <= now || inv.sends !== p.send) return null;
  const { token, hash } = linkToken(deps.config.signingSecret, 'invitation', inv.id, inv.sends);
  if (hash !== inv.tokenHash) return null;
  return invitationMail({
    to: inv.email,
    workspaceName: inv.workspace.name,
    role: inv.role,
    inviter: inv.invitedBy ? (inv.invitedBy.name ?? inv.invitedBy.email) : null,
    link: `${deps.config.publicBaseUrl}/dashboard/invite/${token}`,
    expiresAt: inv.expiresAt,
  });
}

async function resetMessage(deps: MailDeps, p: Payload, now: Date): Promise<MailMessage | null> {
  const reset = await passwordResetRepository.forMail(deps.db, p.id);
  if (!reset?.user || !reset.userId || reset.usedAt || reset.expiresAt <= now) return null;
  // Only the first few links of any hour are mailed: counted by when the links were made, not sent, so that the
  // answer does not depend on the order the jobs run in.
  const made = reset.createdAt;
  const before = await passwordResetRepository.countBetween(
    deps.db,
    reset.userId,
    new Date(made.getTime() - 3600_000),
    made,
  );
  if (before >= RESET_MAILS_PER_HOUR) return null;
  const { token, hash } = linkToken(deps.config.signingSecret, 'password-reset', reset.id);
  if (hash !== reset.tokenHash) return null;
  return passwordResetMail({
    to: reset.user.email,
    link: `${deps.config.publicBaseUrl}/dashboard/reset-password/${token}`,
    expiresAt: reset.expiresAt,
  });
}

export function mailSend(deps: MailDeps) {
  return async (p: Payload): Promise<{ sent: boolean }> => {
    const now = new Date();
    const message = p.kind === 'invitation' ? await invitationMessage(deps, p, now) : await resetMessage(deps, p, now);
    if (!message) return { sent: false };
    try {
      await deps.mailer.send(message);
    } catch (e) {
      if (!isPermanentSmtpFailure(e)) throw e;
      // The server's words may quote the address; the row's id is enough to find it.
      throw new UnrecoverableError(`${p.kind} ${p.id}: the SMTP server refused the message for good`);
    }
    deps.logger.info({ kind: p.kind, id: p.id, send: p.send }, 'mail sent');
    return { sent: true };
  };
}
