// Every service's internal ops port, end to end on a running fleet (npm start on this file's stores): /healthz,
// /readyz naming its own stores (and for a worker, its worker), and /metrics with the series an operator needs —
// scraped after real traffic, so each name is checked to exist and to have moved. The edge's public port serves no
// /metrics.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FilesRetentionSweep } from '@gensvc/contracts';
import { createQueues, enqueue } from '@gensvc/queue';
import { eventually, freePort, jsonOf, makeKey, sampleMedia, startTlsServer, useTestContext } from '@gensvc/testing';
import { runCurl, startFleet, storesOf } from './fleet-under-test';

const ctx = useTestContext();

/** Sum of every sample of `name` (all label sets) whose labels include `having`, or null when there is none. */
function total(text: string, name: string, having: Record<string, string> = {}): number | null {
  let sum: number | null = null;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const labels = m[2] ?? '';
    if (!Object.entries(having).every(([k, v]) => labels.includes(`${k}="${v}"`))) continue;
    sum = (sum ?? 0) + Number(m[3]);
  }
  return sum;
}

it("serves /healthz, /readyz and moving /metrics on every service's ops port, none on the public port", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gensvc-ops-'));
  // A receiver that always fails: five attempts at once (schedule 0), then the delivery is parked.
  const receiver = await startTlsServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(500).end());
  });
  const caFile = join(dir, 'receiver-ca.pem');
  writeFileSync(caFile, receiver.caPem);
  const port = await freePort();
  const fleet = startFleet(
    port,
    { ...storesOf(ctx), NODE_EXTRA_CA_CERTS: caFile, CALLBACK_RETRY_SCHEDULE: '0,0,0,0,0' },
    dir,
  );
  const queues = createQueues({ connection: ctx.redis, prefix: ctx.env.QUEUE_PREFIX! });
  try {
    const { key, evaluate, task: printedTask, opsPorts } = await fleet.printed;
    expect(Object.keys(opsPorts).sort()).toEqual([
      'archiver',
      'callback-dispatcher',
      'edge',
      'evaluate-worker',
      'task-runner',
    ]);
    const base = `http://127.0.0.1:${port}`;
    const auth = { authorization: `Bearer ${key}` };
    const post = (path: string, body: object, headers: Record<string, string> = auth) =>
      fetch(`${base}${path}`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });

    // Traffic: an evaluation, a chat, a task archived, a task whose callback is parked, a refused call, a swept file.
    expect(runCurl(evaluate).model).toBe('sim/eval-1');
    expect(
      (await post('/v1/chat/completions', { model: 'sim/chat-1', messages: [{ role: 'user', content: 'hi' }] })).status,
    ).toBe(200);
    const archived = runCurl(printedTask);
    const parked = await jsonOf(
      await post('/api/v1/sim/text-to-image', {
        model: 'sim/image-1',
        prompt: 'x',
        size: '512x512',
        callback_url: `${receiver.url}/hook`,
      }),
    );
    expect(parked.status).toBe('queued');
    const balance = await jsonOf(await fetch(`${base}/api/v1/me/balance`, { headers: auth }));
    const capped = await makeKey(ctx.db, balance.workspace_id, { spendCap: 0n });
    expect(
      (
        await post(
          '/v1/chat/completions',
          { model: 'sim/chat-1', messages: [{ role: 'user', content: 'hi' }] },
          { authorization: `Bearer ${capped.secret}` },
        )
      ).status,
    ).toBe(402);
    const form = new FormData();
    form.append('purpose', 'vision');
    form.append('file', new Blob([sampleMedia.png(2, 2)]), 'a.png');
    const uploaded = await jsonOf(await fetch(`${base}/v1/files`, { method: 'POST', headers: auth, body: form }));
    await ctx.db.file.update({ where: { id: uploaded.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    await enqueue(queues, FilesRetentionSweep, {});

    await eventually(
      async () => (await ctx.db.task.findUnique({ where: { id: archived.task_id } }))?.status === 'completed',
      'the printed task completed',
      30_000,
    );
    await eventually(
      async () => (await ctx.db.task.findUnique({ where: { id: parked.task_id } }))?.callbackState === 'parked',
      'the callback parked',
      30_000,
    );
    await eventually(
      async () => (await ctx.db.file.findUnique({ where: { id: uploaded.id } })) === null,
      'the expired upload swept',
      30_000,
    );

    const scrape = async (service: string) => {
      const res = await fetch(`http://127.0.0.1:${opsPorts[service]}/metrics`);
      expect(res.status).toBe(200);
      return res.text();
    };
    // Each series exists and has moved (a count, a sum or a gauge above zero), under the name and labels operators use.
    const moved: Record<string, [string, Record<string, string>?][]> = {
      edge: [
        ['http_request_duration_seconds_count', { method: 'POST', status: '200' }],
        ['http_request_duration_seconds_count', { status: '402' }],
        [
          'gensvc_upstream_request_duration_seconds_count',
          { channel: 'sim-openai', model: 'sim/chat-1', outcome: 'ok' },
        ],
        ['gensvc_tokens_total', { model: 'sim/chat-1', direction: 'input' }],
        ['gensvc_tokens_total', { model: 'sim/chat-1', direction: 'output' }],
        ['gensvc_spend_microunits_total', { model: 'sim/chat-1' }],
        // Evaluate is charged by the edge through its lease: its tokens and spend count where it is charged.
        ['gensvc_tokens_total', { model: 'sim/eval-1' }],
        ['gensvc_spend_microunits_total', { model: 'sim/eval-1' }],
        ['gensvc_reservations_refused_total', { reason: 'spend_cap' }],
        ['gensvc_circuit_breaker_state', { channel: 'sim-openai', state: 'closed' }],
      ],
      'evaluate-worker': [
        [
          'gensvc_upstream_request_duration_seconds_count',
          { channel: 'sim-evaluate', model: 'sim/eval-1', outcome: 'ok' },
        ],
        ['gensvc_job_duration_seconds_count', { queue: 'evaluate', job: 'evaluate.run', outcome: 'completed' }],
      ],
      'task-runner': [
        ['gensvc_upstream_request_duration_seconds_count', { model: 'sim/image-1', outcome: 'ok' }],
        ['gensvc_spend_microunits_total', { model: 'sim/image-1' }],
        ['gensvc_job_duration_seconds_count', { queue: 'tasks', job: 'task.submit', outcome: 'completed' }],
        ['gensvc_job_duration_seconds_count', { queue: 'tasks', job: 'task.poll' }],
      ],
      archiver: [
        ['gensvc_archives_total', { outcome: 'archived' }],
        ['gensvc_archive_bytes_total'],
        ['gensvc_retention_removed_total', { kind: 'file' }],
        ['gensvc_job_duration_seconds_count', { queue: 'archive', job: 'archive.output', outcome: 'completed' }],
      ],
      'callback-dispatcher': [
        ['gensvc_callback_attempts_total', { outcome: 'failed' }],
        ['gensvc_callbacks_parked'],
        ['gensvc_job_duration_seconds_count', { queue: 'callbacks', job: 'callback.deliver', outcome: 'completed' }],
      ],
    };
    const queueOf: Record<string, string> = {
      'evaluate-worker': 'evaluate',
      'task-runner': 'tasks',
      archiver: 'archive',
      'callback-dispatcher': 'callbacks',
    };
    for (const [service, series] of Object.entries(moved)) {
      const text = await eventually(
        async () => {
          const t = await scrape(service);
          return series.every(([name, labels]) => (total(t, name, labels) ?? 0) > 0) ? t : null;
        },
        `every series of ${service} to move`,
        15_000,
      ).catch(async () => {
        const t = await scrape(service);
        throw new Error(
          `${service}: ${series
            .filter(([n, l]) => !((total(t, n, l) ?? 0) > 0))
            .map(([n, l]) => `${n}${JSON.stringify(l ?? {})}`)
            .join(', ')} did not move`,
        );
      });
      expect(text).toMatch(new RegExp(`^process_cpu_user_seconds_total\\{service="${service}"\\} `, 'm'));
      if (queueOf[service]) {
        for (const state of ['waiting', 'active', 'delayed', 'failed'])
          expect(total(text, 'gensvc_queue_jobs', { queue: queueOf[service]!, state })).not.toBeNull();
      }
      expect(await jsonOf(await fetch(`http://127.0.0.1:${opsPorts[service]}/healthz`))).toEqual({ status: 'ok' });
      const ready = await fetch(`http://127.0.0.1:${opsPorts[service]}/readyz`);
      const body = await jsonOf(ready);
      expect({ status: ready.status, body: body.status }).toEqual({ status: 200, body: 'ready' });
      expect(body.checks.postgres).toBe('ok');
      expect(body.checks.redis).toBe('ok');
      if (service !== 'edge') expect(Object.keys(body.checks).some((c) => c.includes('worker'))).toBe(true);
    }
    expect(total(await scrape('callback-dispatcher'), 'gensvc_callback_attempts_total', { outcome: 'failed' })).toBe(5);
    // The public port: the API, no metrics.
    expect((await fetch(`${base}/metrics`)).status).toBe(404);
  } finally {
    fleet.ctrlC();
    await fleet.exited;
    await queues.close();
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);
