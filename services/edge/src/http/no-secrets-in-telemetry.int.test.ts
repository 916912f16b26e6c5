// No secret in logs or traces: a real edge process logs every request (LOG_LEVEL=info) and exports every span
// (ratio 1) to a collector, while it serves an invitation (token in the path), a signed download (`?token=`), a
// Google-style call (`?key=`) and a `?signature=`; neither its output nor any span holds one of those secrets.
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
  waitForHttp,
  type OtlpCollector,
  type ServiceProcess,
} from '@gensvc/testing';
import { DashboardClient } from '../routes/dashboard/dashboard-test-support';

const ctx = useTestContext();
let collector: OtlpCollector;
let edge: ServiceProcess;
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
  await waitForHttp(`${url}/healthz`, edge);
}, 120_000);
afterAll(async () => {
  if (edge.child.exitCode === null) await edge.stop();
  await collector.close();
});

it('keeps invitation and link tokens, keys and signatures out of the access log and the spans', async () => {
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
  const output = edge.output();
  const spans = JSON.stringify(collector.spans);
  const secrets = {
    invitation: invitation.token,
    password,
    fileToken,
    fileSignature: fileToken.split('.')[2]!,
    apiKey,
    signature,
  };
  for (const [what, secret] of Object.entries(secrets)) {
    expect({ what, inLogs: output.includes(secret) }).toEqual({ what, inLogs: false });
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
      { route: '/api/v1/files/:fileId/content', path: '/api/v1/files/:fileId/content', query: 'token=REDACTED' },
      expect.objectContaining({ query: 'key=REDACTED' }),
      { route: '/healthz', path: '/healthz', query: 'signature=REDACTED' },
    ]),
  );
}, 120_000);
