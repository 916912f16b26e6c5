// createDb's pool: an idle connection that Postgres ends (a restart, an operator's pg_terminate_backend) is reported on
// the service's log and dropped, the process goes on, and the next statement connects anew.
import { useTestContext } from '@gensvc/testing';
import { closeDb, createDb, pingDb, queryPrepared, clientOf } from './client';

const ctx = useTestContext();

test('an idle connection ended by Postgres is logged, and the next statement reconnects', async () => {
  const warned: Array<{ fields: object; msg: string }> = [];
  const backendPid = async () =>
    (await queryPrepared<{ pid: number }>(clientOf(db), 'test_backend_pid', 'SELECT pg_backend_pid() AS pid', []))[0]!
      .pid;
  const db = createDb(ctx.env.DATABASE_URL!, { max: 1, log: { warn: (fields, msg) => warned.push({ fields, msg }) } });
  try {
    const pid = await backendPid();
    // The connection is idle in the pool now; ended from another session.
    await queryPrepared(clientOf(ctx.db), 'test_terminate', 'SELECT pg_terminate_backend($1::int)', [pid]);
    const deadline = Date.now() + 5_000;
    while (warned.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(warned).toHaveLength(1);
    expect(warned[0]!.msg).toMatch(/idle connection failed/);
    expect((warned[0]!.fields as { err: Error }).err).toBeInstanceOf(Error);
    await expect(pingDb(db)).resolves.toBeUndefined();
    expect(await backendPid()).not.toBe(pid);
  } finally {
    await closeDb(db);
  }
});

test('names its connections after the service (application_name), unless the URL names them itself', async () => {
  const nameOf = async (db: ReturnType<typeof createDb>) =>
    (
      await queryPrepared<{ name: string }>(
        clientOf(db),
        'test_application_name',
        "SELECT current_setting('application_name') AS name",
        [],
      )
    )[0]!.name;
  const named = createDb(ctx.env.DATABASE_URL!, { max: 1, service: 'test-service' });
  const url = new URL(ctx.env.DATABASE_URL!);
  url.searchParams.set('application_name', 'operators-own');
  const own = createDb(url.href, { max: 1, service: 'test-service' });
  try {
    expect(await nameOf(named)).toBe('gensvc-test-service');
    expect(await nameOf(own)).toBe('operators-own');
  } finally {
    await Promise.all([closeDb(named), closeDb(own)]);
  }
});
