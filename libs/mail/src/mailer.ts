// Sending through SMTP with nodemailer: one pooled transport per process, closed at shutdown.
import { createTransport } from 'nodemailer';
import type SMTPPool from 'nodemailer/lib/smtp-pool';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html: string;
}

export interface Mailer {
  /** Hands the message to the SMTP server; resolves with the server's message id once it accepted it. */
  send(message: MailMessage): Promise<{ messageId: string }>;
  /** Whether the server answers and accepts our credentials (a readiness check). */
  verify(): Promise<boolean>;
  close(): void;
}

/** A server's refusal for good (5xx: no such mailbox, policy): retrying the same message cannot succeed. */
export function isPermanentSmtpFailure(e: unknown): boolean {
  const code = (e as { responseCode?: unknown } | null)?.responseCode;
  return typeof code === 'number' && code >= 500 && code < 600;
}

export interface MailerOptions {
  /** SMTP_URL: smtp://[user:pass@]host[:port] (STARTTLS when the server offers it) or smtps:// (TLS from the start). */
  smtpUrl: string;
  /** MAIL_FROM. */
  from: string;
}

export function createMailer(opts: MailerOptions): Mailer {
  // Pooled: the connections stay open across messages (a burst of invitations is one TCP and TLS handshake);
  // the timeouts bound a job's wait on a server that stops answering.
  const url = new URL(opts.smtpUrl);
  const secure = url.protocol === 'smtps:';
  const options: SMTPPool.Options = {
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port ? Number(url.port) : secure ? 465 : 587,
    secure,
    ...(url.username
      ? { auth: { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } }
      : {}),
    pool: true,
    maxConnections: 4,
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 30_000,
  };
  const transport = createTransport(options, { from: opts.from });
  return {
    async send(message) {
      const info = await transport.sendMail(message);
      return { messageId: String(info.messageId) };
    },
    verify: () =>
      transport.verify().then(
        () => true,
        () => false,
      ),
    close: () => transport.close(),
  };
}
