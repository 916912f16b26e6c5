// GET /api/v1/usage against a real edge and Postgres: a known set of ledger entries (many small charges, refunds,
// top-ups, image and video tasks, another workspace's spend, entries just outside the range) summed exactly.
import { newId, toAmount } from '@gensvc/db';
import { jsonOf, makeKey, makeWorkspace, useTestContext } from '@gensvc/testing';
import { startEdge, type EdgeUnderTest } from '../../edge-under-test';

const ctx = useTestContext();
let edge: EdgeUnderTest;
let workspaceId: string;
let secret: string;
let keyA: string;
let keyB: string;

const DAYS = ['2026-03-01', '2026-03-02', '2026-03-03'];
const at = (day: string, h: number, m = 0) =>
  new Date(`${day}T${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}:00.000Z`);

interface Expect {
  calls: number;
  input_tokens: number;
  output_tokens: number;
  images: number;
  video_seconds: number;
  micros: bigint;
}
const zero = (): Expect => ({ calls: 0, input_tokens: 0, output_tokens: 0, images: 0, video_seconds: 0, micros: 0n });
const byDay = new Map<string, Expect>();
const byModel = new Map<string | null, Expect>();
const byKey = new Map<string | null, Expect>();
const total = zero();
const forKeyA = zero();

type Entry = {
  kind: 'charge' | 'refund' | 'topup';
  day: string;
  hour: number;
  model: string | null;
  key: string | null;
  amount: bigint;
  input?: number;
  output?: number;
  taskId?: string;
};
const entries: Entry[] = [];

/** Records an entry to write, and what it adds to each expected row (in range only). */
function add(e: Entry, counted = true, images = 0, videoSeconds = 0) {
  entries.push(e);
  if (!counted || e.kind === 'topup') return;
  const charge = e.kind === 'charge';
  for (const [map, k] of [
    [byDay, e.day],
    [byModel, e.model],
    [byKey, e.key],
  ] as const) {
    const row = (map as Map<string | null, Expect>).get(k) ?? zero();
    (map as Map<string | null, Expect>).set(k, row);
    bump(row);
  }
  bump(total);
  if (e.key === keyA) bump(forKeyA);
  function bump(row: Expect) {
    row.micros += -e.amount;
    if (!charge) return;
    row.calls++;
    row.input_tokens += e.input ?? 0;
    row.output_tokens += e.output ?? 0;
    row.images += images;
    row.video_seconds += videoSeconds;
  }
}

beforeAll(async () => {
  const ws = await makeWorkspace(ctx.db, { balance: 0n });
  workspaceId = ws.id;
  await ctx.db.workspace.update({ where: { id: ws.id }, data: { currency: 'EUR' } });
  const a = await makeKey(ctx.db, ws.id, { scopes: ['account.read'] });
  secret = a.secret;
  keyA = a.key.id;
  keyB = (await makeKey(ctx.db, ws.id)).key.id;

  // 1200 small chat charges (1..997 micro-units each: a float sum of these drifts; the ledger's does not).
  let seed = 7;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  for (let i = 0; i < 1200; i++) {
    const model = i % 3 === 0 ? 'sim/chat-b' : 'sim/chat-a';
    add({
      kind: 'charge',
      day: DAYS[i % 3]!,
      hour: rand(24),
      model,
      key: i % 4 === 0 ? keyB : keyA,
      amount: -BigInt(1 + rand(997)),
      input: rand(5000),
      output: rand(900),
    });
  }
  add({ kind: 'refund', day: DAYS[1]!, hour: 5, model: 'sim/chat-a', key: keyA, amount: 1234n });
  add({ kind: 'topup', day: DAYS[0]!, hour: 1, model: null, key: null, amount: 50_000_000n });
  // A charge whose key was since deleted, without a model.
  add({ kind: 'charge', day: DAYS[2]!, hour: 9, model: null, key: null, amount: -777n });

  // Tasks: an image (1 image), an edit asked n=2 that got 3 results (charged 2), a video of 8 s.
  const task = async (operation: string, model: string, input: object, outputs: object[]) => {
    const id = newId('tsk');
    await ctx.db.task.create({
      data: { id, workspaceId, apiKeyId: keyB, model, operation, status: 'completed', input, output: { outputs } },
    });
    return id;
  };
  const image = { kind: 'image', url: 'https://provider.example/1.png' };
  const t1 = await task('text-to-image', 'sim/image-1', { prompt: 'p', width: 64, height: 64 }, [image]);
  const t2 = await task('images.edits', 'sim/image-1', { prompt: 'p', n: 2 }, [image, image, image]);
  const t3 = await task('text-to-video', 'sim/video-1', { prompt: 'p', width: 64, height: 64, duration_seconds: 8 }, [
    { kind: 'video', url: 'https://provider.example/v.mp4', duration: 8 },
  ]);
  add(
    { kind: 'charge', day: DAYS[0]!, hour: 10, model: 'sim/image-1', key: keyB, amount: -40_000n, taskId: t1 },
    true,
    1,
  );
  add(
    { kind: 'charge', day: DAYS[1]!, hour: 10, model: 'sim/image-1', key: keyB, amount: -80_000n, taskId: t2 },
    true,
    2,
  );
  add(
    { kind: 'charge', day: DAYS[2]!, hour: 10, model: 'sim/video-1', key: keyB, amount: -800_000n, taskId: t3 },
    true,
    0,
    8,
  );

  // Outside the range: the day before, and the first instant after it.
  add(
    { kind: 'charge', day: '2026-02-28', hour: 23, model: 'sim/chat-a', key: keyA, amount: -999_999n, input: 1 },
    false,
  );
  entries.push({
    kind: 'charge',
    day: '2026-03-04',
    hour: 0,
    model: 'sim/chat-a',
    key: keyA,
    amount: -555_555n,
    input: 1,
  });

  let balance = 0n;
  await ctx.db.ledgerEntry.createMany({
    data: entries.map((e, i) => {
      balance += e.amount;
      return {
        id: newId('led'),
        workspaceId,
        apiKeyId: e.key,
        kind: e.kind,
        amount: e.amount,
        balanceAfter: balance,
        requestId: `req_${i}`,
        model: e.model,
        inputTokens: e.input ?? null,
        outputTokens: e.output ?? null,
        taskId: e.taskId ?? null,
        createdAt: at(e.day, e.hour, i % 60),
      };
    }),
  });
  // Another workspace's spend on the same days is never counted.
  const other = await makeWorkspace(ctx.db);
  await ctx.db.ledgerEntry.create({
    data: {
      id: newId('led'),
      workspaceId: other.id,
      kind: 'charge',
      amount: -123_456n,
      balanceAfter: 0n,
      model: 'sim/chat-a',
      createdAt: at(DAYS[1]!, 12),
    },
  });
  edge = await startEdge(ctx);
});

afterAll(async () => {
  await edge?.close();
});

type UsageRow = Record<string, unknown> & { key_id?: string };
type UsageBody = { data: UsageRow[]; totals: Record<string, unknown>; error?: unknown };
const usage = async (query: string, key = secret) => {
  const res = await fetch(`${edge.url}/api/v1/usage?${query}`, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, body: (await jsonOf(res)) as UsageBody };
};
const figures = (e: Expect) => ({
  calls: e.calls,
  input_tokens: e.input_tokens,
  output_tokens: e.output_tokens,
  images: e.images,
  video_seconds: e.video_seconds,
  cost: toAmount(e.micros),
});

describe('GET /api/v1/usage', () => {
  it('per day: rows and totals equal the ledger exactly, in the workspace currency', async () => {
    const { status, body } = await usage(`from=${DAYS[0]}&to=${DAYS[2]}`);
    expect(status).toBe(200);
    expect(body).toMatchObject({
      object: 'usage',
      currency: 'EUR',
      from: '2026-03-01T00:00:00.000Z',
      to: '2026-03-04T00:00:00.000Z',
      group_by: 'day',
      key_id: null,
    });
    expect(body.data).toEqual(DAYS.map((day) => ({ day, ...figures(byDay.get(day)!) })));
    expect(body.totals).toEqual(figures(total));
    expect(body.totals).toMatchObject({ images: 3, video_seconds: 8, calls: 1200 + 1 + 3 });
    // The ledger's own sum over the range, read independently.
    const agg = await ctx.db.ledgerEntry.aggregate({
      where: {
        workspaceId,
        kind: { in: ['charge', 'refund'] },
        createdAt: { gte: at(DAYS[0]!, 0), lt: new Date('2026-03-04T00:00:00Z') },
      },
      _sum: { amount: true, inputTokens: true, outputTokens: true },
    });
    expect(body.totals.cost).toBe(toAmount(-agg._sum.amount!));
    expect(body.totals.input_tokens).toBe(agg._sum.inputTokens);
    // The total is summed in micro-units: adding the rows' costs as floats is not how it is made.
    expect(body.totals.cost).toBe(Number(total.micros) / 1e6);
  });

  it('per model and per key, and for one key; a time `to` is exclusive', async () => {
    const models = await usage(`from=${DAYS[0]}&to=${DAYS[2]}&group_by=model`);
    const expectedModels = [...byModel.entries()]
      .sort(([a], [b]) => (a === null ? 1 : b === null ? -1 : a < b ? -1 : 1))
      .map(([model, e]) => ({ model, ...figures(e) }));
    expect(models.body.data).toEqual(expectedModels);
    expect(models.body.totals).toEqual(figures(total));

    const keys = await usage(`from=${DAYS[0]}&to=${DAYS[2]}&group_by=key`);
    expect(new Map(keys.body.data.map((r) => [r.key_id, r]))).toEqual(
      new Map([...byKey.entries()].map(([key_id, e]) => [key_id, { key_id, ...figures(e) }])),
    );
    expect(keys.body.totals).toEqual(figures(total));

    const one = await usage(`from=${DAYS[0]}&to=${DAYS[2]}&group_by=key&key_id=${keyA}`);
    expect(one.body.data).toEqual([{ key_id: keyA, ...figures(forKeyA) }]);
    expect(one.body.totals).toEqual(figures(forKeyA));

    // Through 2026-03-04T00:00:00Z exclusive: the entry at 00:00 that day is not in; through the day it is.
    const exclusive = await usage(`from=${DAYS[0]}&to=2026-03-04T00:00:00Z`);
    expect(exclusive.body.totals.cost).toBe(toAmount(total.micros));
    const inclusive = await usage(`from=${DAYS[0]}&to=2026-03-04`);
    expect(inclusive.body.totals.cost).toBe(toAmount(total.micros + 555_555n));
    const none = await usage('from=2025-01-01&to=2025-01-31');
    expect(none.body.data).toEqual([]);
    expect(none.body.totals).toEqual({
      calls: 0,
      input_tokens: 0,
      output_tokens: 0,
      images: 0,
      video_seconds: 0,
      cost: 0,
    });
  });

  it('refuses bad ranges and fields with 400 naming the field; needs account.read', async () => {
    for (const [query, param] of [
      [`from=${DAYS[2]}&to=${DAYS[0]}`, 'to'],
      ['from=2025-01-01&to=2026-01-03', 'from'],
      ['from=2026-13-01', 'from'],
      ['from=2026-02-30', 'from'],
      ['to=yesterday', 'to'],
      ['to=2026-03-01T10:00:00', 'to'],
      ['group_by=week', 'group_by'],
      ['key_id=key_short', 'key_id'],
      ['since=2026-01-01', 'since'],
    ] as const) {
      const { status, body } = await usage(query);
      expect([query, status]).toEqual([query, 400]);
      expect(body.error).toMatchObject({ code: 'invalid_request', param });
    }
    const full = await usage('from=2025-01-01&to=2026-01-01');
    expect(full.status).toBe(200); // 366 days is allowed
    const { secret: noScope } = await makeKey(ctx.db, workspaceId, { scopes: ['llm.chat'] });
    const refused = await usage('', noScope);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ code: 'insufficient_scope', param: 'account.read' });
  });
});
