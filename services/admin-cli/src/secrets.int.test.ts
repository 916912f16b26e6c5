// `secrets reencrypt` and the channel commands against real rows: plaintext rows (stored before sealing) and rows
// sealed under a key no longer first are sealed under the first ENCRYPTION_KEYS key; a second run changes nothing.
import { randomBytes } from 'node:crypto';
import { callbackRepository, newId, openChannel, SecretBox, secretAad } from '@gensvc/db';
import { makeWorkspace, useTestContext } from '@gensvc/testing';
import { newCallbackSecret } from '@gensvc/webhooks';
import { cliFor, runCli } from './cli-under-test';

const oldKey = { id: 'k1', key: randomBytes(32) };
const newKey = { id: 'k2', key: randomBytes(32) };
const ctx = useTestContext({
  ENCRYPTION_KEYS: `${newKey.id}:${newKey.key.toString('base64')},${oldKey.id}:${oldKey.key.toString('base64')}`,
});
const { cliJson, ok } = cliFor(ctx);

/** A channel row as the database holds it, whatever its secret column says. */
const storeChannel = (name: string, secret: string, id = newId('ch')) =>
  ctx.db.channel.create({ data: { id, name, kind: 'openai', baseUrl: 'https://api.example.com/v1', secret } });

it('re-seals plaintext rows and rows of an older key under the first key, idempotently, in batches', async () => {
  const old = new SecretBox([oldKey]);
  // More channels than one batch (100), some plaintext, one sealed under k1, one with no credential.
  const plain = await Promise.all(
    Array.from({ length: 120 }, (_, i) => storeChannel(`plain-${String(i).padStart(3, '0')}`, `sk-plain-${i}`)),
  );
  const oldId = newId('ch');
  await storeChannel('old-key', old.seal('sk-old', secretAad('channel.secret', oldId)), oldId);
  await storeChannel('none', '');
  const [a, b] = [await makeWorkspace(ctx.db), await makeWorkspace(ctx.db)];
  const plainSecret = newCallbackSecret();
  await ctx.db.callbackSecret.create({ data: { workspaceId: a.id, secret: plainSecret } });
  const [current, previous] = [newCallbackSecret(), newCallbackSecret()];
  const aad = secretAad('callback-secret', b.id);
  await ctx.db.callbackSecret.create({
    data: {
      workspaceId: b.id,
      secret: old.seal(current, aad),
      previousSecret: previous,
      previousExpiresAt: new Date(Date.now() + 3_600_000),
    },
  });

  // A previous secret past its overlap, sealed under a key no longer listed: it signs nothing and is dropped.
  const c = await makeWorkspace(ctx.db);
  const gone = new SecretBox([{ id: 'k0', key: randomBytes(32) }]);
  const cAad = secretAad('callback-secret', c.id);
  const cSecret = newCallbackSecret();
  await ctx.db.callbackSecret.create({
    data: {
      workspaceId: c.id,
      secret: ctx.secrets.seal(cSecret, cAad),
      previousSecret: gone.seal(newCallbackSecret(), cAad),
      previousExpiresAt: new Date(Date.now() - 1_000),
    },
  });

  const first = await ok(['secrets', 'reencrypt']);
  expect(first).toEqual({
    key_id: 'k2',
    channels: { rows: 122, sealed: 120, rekeyed: 1 },
    callback_secrets: { rows: 3, sealed: 2, rekeyed: 1 },
  });
  const channels = await ctx.db.channel.findMany();
  for (const c of channels) {
    if (c.name === 'none') expect(c.secret).toBe('');
    else expect(c.secret).toMatch(/^v1:k2:/);
  }
  const k2Only = new SecretBox([newKey]);
  const byName = new Map(channels.map((c) => [c.name, c]));
  expect(openChannel(k2Only, byName.get('old-key')!).secret).toBe('sk-old');
  for (const [i, c] of plain.entries()) {
    expect(byName.get(c.name)!.secret).not.toContain('sk-plain');
    expect(openChannel(k2Only, byName.get(c.name)!).secret).toBe(`sk-plain-${i}`);
  }
  const rows = await ctx.db.callbackSecret.findMany();
  expect(rows.flatMap((r) => [r.secret, r.previousSecret]).filter((v) => v !== null)).toEqual(
    Array.from({ length: 4 }, () => expect.stringMatching(/^v1:k2:/)),
  );
  expect(rows.find((r) => r.workspaceId === c.id)).toMatchObject({ previousSecret: null, previousExpiresAt: null });
  expect(await callbackRepository.signingSecrets(ctx.db, k2Only, c.id, newCallbackSecret)).toEqual([cSecret]);
  // Opened with the new key alone: k1 can be dropped from ENCRYPTION_KEYS now.
  expect((await callbackRepository.secret(ctx.db, k2Only, a.id, newCallbackSecret)).secret).toBe(plainSecret);
  expect(await callbackRepository.signingSecrets(ctx.db, k2Only, b.id, newCallbackSecret)).toEqual([current, previous]);

  const again = await cliJson(['secrets', 'reencrypt']);
  expect(again.code).toBe(0);
  expect(again.body).toEqual({
    key_id: 'k2',
    channels: { rows: 122, sealed: 0, rekeyed: 0 },
    callback_secrets: { rows: 3, sealed: 0, rekeyed: 0 },
  });
  expect(await ctx.db.channel.findMany()).toEqual(channels);
});

it('seals the credential of a channel it adds or updates; names ENCRYPTION_KEYS when it has none', async () => {
  const added = await ok(['channel', 'add', '--name', 'sealed', '--kind', 'openai', '--base-url', 'https://x.test']);
  expect(added.has_secret).toBe(false);
  await ok(['channel', 'update', '--name', 'sealed', '--secret', 'sk-updated-credential']);
  const row = await ctx.db.channel.findUniqueOrThrow({ where: { name: 'sealed' } });
  expect(row.secret).toMatch(/^v1:k2:/);
  expect(row.secret).not.toContain('sk-updated-credential');
  expect(openChannel(ctx.secrets, row).secret).toBe('sk-updated-credential');

  const { ENCRYPTION_KEYS: _, ...without } = ctx.env;
  const refused = await runCli(['secrets', 'reencrypt', '--json'], without);
  expect(refused.code).toBe(1);
  expect(JSON.parse(refused.stdout).error).toMatchObject({
    code: 'invalid_config',
    message: expect.stringContaining('ENCRYPTION_KEYS is required'),
  });
  // Commands that touch no secret run without it.
  expect((await runCli(['channel', 'list', '--json'], without)).code).toBe(0);
});
