import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

// scrypt at one of OWASP's equal-strength settings (N=2^16, r=8, p=2: the work of N=2^17, p=1 in half its memory),
// stored with the hash so they can be raised later; a hash made with other parameters is checked with its own.
// Each hash holds 128 * N * r bytes (64 MiB) outside the heap while it runs (OpenSSL runs the p lanes one after
// another): a process bounds how many run at once (PasswordHashing below).
const PARAMS = { N: 2 ** 16, r: 8, p: 2 };
const KEY_LENGTH = 64;

function derive(password: string, salt: Buffer, p: { N: number; r: number; p: number }): Promise<Buffer> {
  const options: ScryptOptions = { N: p.N, r: p.r, p: p.p, maxmem: 256 * p.N * p.r };
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, options, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

const encode = (salt: Buffer, key: Buffer) =>
  ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64'), key.toString('base64')].join('$');

/** `scrypt$N$r$p$<salt b64>$<hash b64>` */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  return encode(salt, await derive(password, salt, PARAMS));
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, N, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const key = await derive(password, Buffer.from(salt, 'base64'), { N: Number(N), r: Number(r), p: Number(p) });
  return key.length === expected.length && timingSafeEqual(key, expected);
}

export interface PasswordHashingOptions {
  /** Hashes running at once (PASSWORD_HASH_CONCURRENCY). */
  concurrency: number;
  /** Hashes waiting for a turn; one more is refused with `busy()`. */
  queueLimit: number;
  /** The error a hash refused for a full queue throws (a 503 with Retry-After). */
  busy: () => Error;
}

/**
 * A process's password hashing within its memory budget: at most `concurrency` scrypt hashes run at once (each
 * holds 64 MiB, and a running one holds a thread of libuv's pool that DNS look-ups and file reads also need), the
 * next `queueLimit` wait their turn in arrival order, and any more is refused at once.
 */
export class PasswordHashing {
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  /** Verified against when there is no account: a real hash at today's parameters that no password matches. */
  private readonly decoy = encode(randomBytes(16), randomBytes(KEY_LENGTH));

  constructor(private readonly options: PasswordHashingOptions) {}

  hash(password: string): Promise<string> {
    return this.inTurn(() => hashPassword(password));
  }

  /**
   * Whether `password` matches `stored`. With no stored hash (an unknown e-mail) the same work is done against a
   * decoy, so that an unknown e-mail and a wrong password take the same time, and the answer is false.
   */
  verify(password: string, stored: string | null): Promise<boolean> {
    return this.inTurn(async () => (await verifyPassword(password, stored ?? this.decoy)) && stored !== null);
  }

  private async inTurn<T>(work: () => Promise<T>): Promise<T> {
    if (this.running < this.options.concurrency) this.running++;
    else if (this.waiting.length >= this.options.queueLimit) throw this.options.busy();
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await work();
    } finally {
      // The turn passes to the next waiting hash, or the slot frees.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
