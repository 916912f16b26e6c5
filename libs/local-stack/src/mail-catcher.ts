// A local SMTP server (smtp-server) that keeps every message it receives, and a small web inbox over HTTP to read
// them: `npm start` sends its mail here where SMTP_URL is unset, and `npm test` reads what the code under test sent
// (GET /api/messages?to=<address>). It accepts any sender and recipient without authentication: loopback only.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { escapeHtml } from '@gensvc/mail';

export interface CaughtMail {
  id: string;
  /** The envelope's sender and recipients (what the SMTP client said, not the headers). */
  from: string;
  to: string[];
  subject: string;
  text: string;
  html: string | null;
  receivedAt: string;
}

export interface MailCatcher {
  /** smtp://127.0.0.1:<port>, for SMTP_URL. */
  smtpUrl: string;
  /** The web inbox: http://127.0.0.1:<port>/ */
  inboxUrl: string;
  stop(): Promise<void>;
}

/** A message larger than this is refused (552) rather than kept. */
const MAX_MESSAGE_BYTES = 10 * 1024 * 1024;
/** The oldest messages are dropped past this many: a long-running npm start stays small. */
const MAX_KEPT = 1000;

/** Plain text as HTML with its http(s) links clickable. */
const linked = (text: string) =>
  escapeHtml(text).replace(/https?:\/\/[^\s<>"']+/g, (url) => `<a href="${url}">${url}</a>`);

/**
 * Starts both servers on free loopback ports. With `dir`, every message is also written there as JSON and the ones
 * already there are read back, so a persistent `npm start` keeps its inbox across runs.
 */
export async function startMailCatcher(opts: { dir?: string } = {}): Promise<MailCatcher> {
  const kept: CaughtMail[] = [];
  let next = 1;
  if (opts.dir) {
    mkdirSync(opts.dir, { recursive: true });
    for (const file of readdirSync(opts.dir).filter((f) => /^\d+\.json$/.test(f))) {
      kept.push(JSON.parse(readFileSync(join(opts.dir, file), 'utf8')) as CaughtMail);
    }
    kept.sort((a, b) => Number(a.id) - Number(b.id));
    next = Number(kept.at(-1)?.id ?? 0) + 1;
  }

  const smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    size: MAX_MESSAGE_BYTES,
    logger: false,
    banner: 'gensvc local mail catcher',
    onData(stream, session, callback) {
      simpleParser(stream)
        .then((parsed) => {
          if ((stream as { sizeExceeded?: boolean }).sizeExceeded) {
            const err = Object.assign(new Error('Message too large'), { responseCode: 552 });
            return callback(err);
          }
          const mail: CaughtMail = {
            id: String(next++),
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            to: session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
            subject: parsed.subject ?? '',
            text: parsed.text ?? '',
            html: typeof parsed.html === 'string' ? parsed.html : null,
            receivedAt: new Date().toISOString(),
          };
          kept.push(mail);
          if (kept.length > MAX_KEPT) kept.splice(0, kept.length - MAX_KEPT);
          if (opts.dir) writeFileSync(join(opts.dir, `${mail.id}.json`), JSON.stringify(mail));
          callback();
        })
        .catch((e: Error) => callback(e));
    },
  });
  await new Promise<void>((resolve, reject) => {
    smtp.once('error', reject);
    smtp.listen(0, '127.0.0.1', () => resolve());
  });
  // A client that goes away mid-message is its own problem, never this process's.
  smtp.on('error', () => {});
  const smtpPort = (smtp.server.address() as AddressInfo).port;

  const http = createServer((req, res) => serveInbox(kept, req, res));
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(0, '127.0.0.1', () => resolve());
  });
  const httpPort = (http.address() as AddressInfo).port;

  return {
    smtpUrl: `smtp://127.0.0.1:${smtpPort}`,
    inboxUrl: `http://127.0.0.1:${httpPort}/`,
    stop: async () => {
      await new Promise<void>((resolve) => smtp.close(() => resolve()));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

function serveInbox(kept: CaughtMail[], req: IncomingMessage, res: ServerResponse) {
  const url = new URL(req.url ?? '/', 'http://inbox');
  const send = (status: number, type: string, body: string) => {
    res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' }).end(body);
  };
  if (req.method !== 'GET') return send(405, 'text/plain', 'GET only\n');
  if (url.pathname === '/api/messages') {
    const to = url.searchParams.get('to')?.toLowerCase();
    const data = to ? kept.filter((m) => m.to.includes(to)) : kept;
    return send(200, 'application/json', JSON.stringify({ data }));
  }
  const one = /^\/(?:api\/)?messages\/(\d+)$/.exec(url.pathname);
  if (one) {
    const mail = kept.find((m) => m.id === one[1]);
    if (!mail) return send(404, 'text/plain', 'No such message\n');
    if (url.pathname.startsWith('/api/')) return send(200, 'application/json', JSON.stringify(mail));
    return send(
      200,
      'text/html; charset=utf-8',
      layout(
        mail.subject || '(no subject)',
        `<p><a href="/">← inbox</a></p><dl><dt>From</dt><dd>${escapeHtml(mail.from)}</dd>` +
          `<dt>To</dt><dd>${escapeHtml(mail.to.join(', '))}</dd><dt>Received</dt><dd>${mail.receivedAt}</dd></dl>` +
          `<pre>${linked(mail.text)}</pre>`,
      ),
    );
  }
  if (url.pathname !== '/') return send(404, 'text/plain', 'Not found\n');
  const rows = [...kept]
    .reverse()
    .map(
      (m) =>
        `<tr><td>${m.receivedAt}</td><td>${escapeHtml(m.to.join(', '))}</td>` +
        `<td><a href="/messages/${m.id}">${escapeHtml(m.subject || '(no subject)')}</a></td></tr>`,
    )
    .join('');
  return send(
    200,
    'text/html; charset=utf-8',
    layout(
      'Local mail',
      kept.length
        ? `<table><tr><th>Received</th><th>To</th><th>Subject</th></tr>${rows}</table>`
        : '<p>No mail yet.</p>',
    ),
  );
}

const layout = (title: string, body: string) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>` +
  '<style>body{font-family:sans-serif;margin:2em}td,th{padding:.2em 1em;text-align:left}pre{white-space:pre-wrap}' +
  `</style></head><body><h1>${escapeHtml(title)}</h1>${body}</body></html>`;
