// Sign-in throttling (DESIGN.md §4 Sessions): at most LIMIT failed sign-ins per account and per client address in a
// fixed window. Each attempt is counted before its password is checked (one atomic INCR), so a burst of racing
// attempts cannot test more than LIMIT passwords; a success then takes its own count back from the address (people
// behind one NAT who sign in correctly are never throttled) and clears the account's failures.
import { hashToken } from '@gensvc/auth';
import { errors } from '@gensvc/errors';
import type { Redis } from 'ioredis';

export const LOGIN_LIMIT = 10;
const TAKE_BACK = "if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('DECR', KEYS[1]) end return 0";
export const LOGIN_WINDOW_S = 15 * 60;

export class LoginThrottle {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly limit = LOGIN_LIMIT,
    private readonly windowS = LOGIN_WINDOW_S,
  ) {}

  private accountKey = (email: string) => `${this.prefix}:login:account:${hashToken(email.toLowerCase())}`;
  private addressKey = (ip: string) => `${this.prefix}:login:address:${ip}`;

  /** Counts an attempt; throws 429 too_many_attempts (with Retry-After) when the account or the address is over. */
  async admit(email: string, ip: string): Promise<void> {
    const keys = [this.accountKey(email), this.addressKey(ip)];
    const multi = this.redis.multi();
    for (const k of keys) multi.incr(k).expire(k, this.windowS, 'NX').ttl(k);
    const replies = (await multi.exec()) ?? [];
    for (let i = 0; i < keys.length; i++) {
      const [countErr, count] = replies[i * 3]!;
      const ttl = Number(replies[i * 3 + 2]![1]);
      if (countErr) throw countErr;
      if (Number(count) > this.limit) throw errors.tooManyAttempts(ttl > 0 ? ttl : this.windowS);
    }
  }

  /** A correct password: the account's failures are forgiven, and the address's count no longer includes this attempt. */
  async succeeded(email: string, ip: string): Promise<void> {
    // Only a count that still exists is taken back: one that expired meanwhile must not go below zero.
    await this.redis.multi().del(this.accountKey(email)).eval(TAKE_BACK, 1, this.addressKey(ip)).exec();
  }
}
