// The demo workspace `npm start` prints a key for. Its secret is kept in .data/demo.json (mode 600) so that a
// second start can print a working key again: a local-development convenience only — the database, as everywhere,
// holds nothing but the key's SHA-256.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { hashApiKey, hashPassword, newApiKey, SCOPES } from '@gensvc/auth';
import { apiKeyRepository, userRepository, withTx, workspaceRepository, type Db } from '@gensvc/db';

export interface Demo {
  workspaceId: string;
  keyId: string;
  secret: string;
  email: string;
  password: string;
}

const DEMO_EMAIL = 'demo@gensvc.local';
const DEMO_BALANCE = 10_000_000n; // 10.00 USD

function readDemo(file: string): Partial<Demo> {
  try {
    return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Partial<Demo>) : {};
  } catch {
    return {};
  }
}

async function keyStillWorks(db: Db, demo: Partial<Demo>): Promise<boolean> {
  if (!demo.secret || !demo.keyId) return false;
  const found = await apiKeyRepository.findBySecretHash(db, hashApiKey(demo.secret));
  const key = found?.matched === 'current' ? found.key : null;
  return !!key && key.id === demo.keyId && !key.revokedAt && (!key.expiresAt || key.expiresAt > new Date());
}

export async function seedDemo(db: Db, file: string): Promise<Demo> {
  const saved = readDemo(file);
  if (await keyStillWorks(db, saved)) return saved as Demo;

  const freshPassword = randomBytes(12).toString('base64url');
  const freshHash = await hashPassword(freshPassword);
  const k = newApiKey();
  // One transaction: a failure half-way leaves no demo workspace without its key.
  const demo = await withTx(db, async (tx): Promise<Demo> => {
    const workspace =
      (saved.workspaceId && (await workspaceRepository.get(tx, saved.workspaceId))) ||
      (await workspaceRepository.create(tx, { name: 'Demo', tier: 'payg', balance: DEMO_BALANCE }));
    let password = saved.password ?? '';
    let user = await userRepository.findByEmail(tx, DEMO_EMAIL);
    if (!user) {
      password = freshPassword;
      user = await userRepository.create(tx, { email: DEMO_EMAIL, passwordHash: freshHash, name: 'Demo owner' });
    }
    await userRepository.addMember(tx, workspace.id, user.id, 'owner');
    const key = await apiKeyRepository.create(tx, {
      workspaceId: workspace.id,
      name: 'demo',
      prefix: k.prefix,
      hash: k.hash,
      scopes: [...SCOPES],
      creatorId: user.id,
      createdVia: 'cli_for_member',
    });
    return { workspaceId: workspace.id, keyId: key.id, secret: k.secret, email: DEMO_EMAIL, password };
  });
  writeFileSync(file, JSON.stringify(demo, null, 2), { mode: 0o600 });
  return demo;
}
