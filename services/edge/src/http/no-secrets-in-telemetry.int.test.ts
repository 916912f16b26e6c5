// No secret in logs or traces: a real edge process logs every request (LOG_LEVEL=info) and exports every span
// (ratio 1) to a collector, while it serves an invitation (token in the path), a password reset (its mailed link's
// token in the path, sent by a real callback-dispatcher that logs and traces alike), a signed download (`?token=`), a
// Google-style call (`?key=`) and a `?signature=`; neither process's output nor any span holds one of those secrets.
import { newOpaqueToken, signFileToken } from '@gensvc/auth';
import { invitationRepository } from '@gensvc/db';
import {
  freePort,
  makeKey,
  makeMember,
  makeOutput,
  makeWorkspace,
  spawnService,
  startOtlpCollector,
  useTestContext,
  awaitMail,
  linkIn,
  waitForHttp,
  waitForOutput,
  type OtlpCollector,
  type ServiceProcess,
} from '@gensvc/testing';
import { DashboardClient } from '../routes/dashboard/dashboard-test-support';

const ctx = useTestContext();
let collector: OtlpCollector;
let edge: ServiceProcess;
let mailSender: ServiceProcess;
let url: string;

beforeAll(async () => {
  collector = await startOtlpCollector();
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  edge = spawnService('edge', {
    ...ctx.env,
    PORT: String(port),
    LOG_LEVEL: 'info',
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
    OTEL_TRACES_SAMPLER_ARG: '1',
  });
  mailSender = spawnService('callback-dispatcher', {
    ...ctx.env,
    LOG_LEVEL: 'info',
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
    OTEL_TRACES_SAMPLER_ARG: '1',
  });
  await Promise.all([waitForHttp(`${url}/healthz`, edge), waitForOutput(mailSender, 'callback dispatcher started')]);
}, 120_000);
afterAll(async () => {
  if (edge.child.exitCode === null) await edge.stop();
  if (mailSender.child.exitCode === null) await mailSender.stop();
  await collector.close();
});

it('keeps invitation, reset and link tokens, keys and signatures out of the access log and the spans', async () => {
  const ws = await makeWorkspace(ctx.db);
  const { user } = await makeMember(ctx.db, ws.id, 'owner');
  const invitation = newOpaqueToken();
  await invitationRepository.create(ctx.db, {
    workspaceId: ws.id,
    email: 'new-person@example.com',
    role: 'member',
    tokenHash: invitation.hash,
    invitedById: user.id,
  });
  const browser = new DashboardClient(url);
  // The link a person follows opens the dashboard's page, then its JSON routes; the page's GET sets the CSRF cookie.
  await (await fetch(`${url}/dashboard/invite/${invitation.token}`)).arrayBuffer();
  await browser.get('/api/v1/dashboard/session');
  expect((await browser.get(`/api/v1/dashboard/invitations/${invitation.token}`)).status).toBe(200);
  const password = 'a password nobody logs';
  expect((await browser.post(`/api/v1/dashboard/invitations/${invitation.token}/accept`, { password })).status).toBe(
    201,
  );

  // A forgotten password: the link is mailed, then opened and used.
  const { email } = await makeMember(ctx.db, ws.id, 'member');
  const page = new DashboardClient(url);
  await page.get('/api/v1/dashboard/session');
  expect((await page.post('/api/v1/dashboard/password-reset', { email })).status).toBe(202);
  const resetToken = linkIn(await awaitMail(email), `${ctx.config.publicBaseUrl}/dashboard/reset-password/`)
    .split('/')
    .pop()!;
  await (await fetch(`${url}/dashboard/reset-password/${resetToken}`)).arrayBuffer();
  expect((await page.get(`/api/v1/dashboard/password-reset/${resetToken}`)).status).toBe(200);
  const newPassword = 'another password nobody logs';
  expect((await page.post(`/api/v1/dashboard/password-reset/${resetToken}`, { password: newPassword })).status).toBe(
    204,
  );

  const { file } = await makeOutput(ctx, ws.id);
  const { token: fileToken } = await signFileToken(ctx.env.SIGNING_SECRET!, { fileId: file.id, workspaceId: ws.id });
  expect((await fetch(`${url}/api/v1/files/${file.id}/content?token=${fileToken}`)).status).toBe(200);

  const { secret: apiKey } = await makeKey(ctx.db, ws.id);
  const google = await fetch(`${url}/v1beta/models/nowhere/no-model:generateContent?key=${apiKey}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hello' }] }] }),
  });
  expect(google.status).toBe(404);
  const signature = 'sig-value-0123456789abcdef';
  await fetch(`${url}/healthz?signature=${signature}`);

  // SIGTERM flushes the logs and the spans still batched.
  expect(await edge.stop('SIGTERM')).toBe(0);
  expect(await mailSender.stop('SIGTERM')).toBe(0);
  const output = edge.output();
  const senderOutput = mailSender.output();
  expect(senderOutput).toContain('"msg":"mail sent"');
  const spans = JSON.stringify(collector.spans);
  const secrets = {
    invitation: invitation.token,
    password,
    resetToken,
    newPassword,
    fileToken,
    fileSignature: fileToken.split('.')[2]!,
    apiKey,
    signature,
  };
  for (const [what, secret] of Object.entries(secrets)) {
    expect({ what, inLogs: output.includes(secret) }).toEqual({ what, inLogs: false });
    expect({ what, inSenderLogs: senderOutput.includes(secret) }).toEqual({ what, inSenderLogs: false });
    expect({ what, inSpans: spans.includes(secret) }).toEqual({ what, inSpans: false });
  }

  // What was logged and traced instead: the route templates, and the queries with their secrets redacted.
  const access = output
    .split('\n')
    .filter((l) => l.includes('"msg":"request"'))
    .map((l) => JSON.parse(l) as { route: string; status: number });
  expect(access).toEqual(
    expect.arrayContaining([
      expect.objectContaining({ route: '/api/v1/dashboard/invitations/:token', status: 200 }),
      expect.objectContaining({ route: '/api/v1/dashboard/invitations/:token/accept', status: 201 }),
      expect.objectContaining({ route: '/api/v1/dashboard/password-reset', status: 202 }),
      expect.objectContaining({ route: '/api/v1/dashboard/password-reset/:token', status: 200 }),
      expect.objectContaining({ route: '/api/v1/dashboard/password-reset/:token', status: 204 }),
      expect.objectContaining({ route: '/api/v1/files/:fileId/content', status: 200 }),
    ]),
  );
  const servers = collector.spans
    .filter((s) => s.service === 'gensvc-edge' && s.kind === 'server')
    .map((s) => ({
      route: s.attributes['http.route'],
      path: s.attributes['url.path'],
      query: s.attributes['url.query'],
    }));
  expect(servers).toEqual(
    expect.arrayContaining([
      {
        route: '/api/v1/dashboard/invitations/:token/accept',
        path: '/api/v1/dashboard/invitations/:token/accept',
        query: undefined,
      },
      {
        route: '/api/v1/dashboard/password-reset/:token',
        path: '/api/v1/dashboard/password-reset/:token',
        query: undefined,
      },
      { route: '/api/v1/files/:fileId/content', path: '/api/v1/files/:fileId/content', query: 'token=REDACTED' },
      expect.objectContaining({ query: 'key=REDACTED' }),
      { route: '/healthz', path: '/healthz', query: 'signature=REDACTED' },
    ]),
  );
}, 120_000);
