// Sign-in throttling (DESIGN.md §4 Sessions) after OWASP's device-cookie scheme ("Slow Down Online Guessing Attacks
// with Device Cookies"), so that guessing at an account cannot lock its owner out:
//  - a browser that has signed in to the account before shows a device cookie issued for it (libs/auth device
//    tokens) and has an allowance of its own: LIMIT failed attempts per window through that cookie, counted for
//    nothing else;
//  - every other attempt on the account (untrusted: no cookie, or one for another account) shares the account's
//    allowance of LIMIT, and the client address's allowance of LIMIT across accounts (the address is req.ip: the
//    client's own behind a trusted proxy, TRUST_PROXY).
// An attacker without the password never holds a device cookie for the account, so at worst they exhaust the
// untrusted allowances; people who signed in from their browser before keep signing in.
// Each attempt is counted before its password is checked (one atomic INCR per count), so a burst of racing attempts
// cannot test more than LIMIT passwords; a success takes its own count back from the address (people behind one NAT
// who sign in correctly are never throttled) and clears the account's (or the device's) failures.
import { hashToken } from '@gensvc/auth';
import { errors } from '@gensvc/errors';
import type { RedisConnection } from '@gensvc/queue';

const LOGIN_LIMIT = 10;
const TAKE_BACK = "if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('DECR', KEYS[1]) end return 0";
const LOGIN_WINDOW_S = 15 * 60;

export interface SignInAttempt {
  email: string;
  /** The client's address (req.ip). */
  ip: string;
  /** The nonce of a valid device cookie issued for this email; null for an untrusted browser. */
  device: string | null;
}

export class LoginThrottle {
  constructor(
    private readonly redis: RedisConnection,
    private readonly prefix: string,
    private readonly limit = LOGIN_LIMIT,
    private readonly windowS = LOGIN_WINDOW_S,
  ) {}

  private accountKey = (email: string) => `${this.prefix}:login:account:${hashToken(email.toLowerCase())}`;
  private addressKey = (ip: string) => `${this.prefix}:login:address:${ip}`;
  private deviceKey = (nonce: string) => `${this.prefix}:login:device:${nonce}`;

  /** Counts an attempt; throws 429 too_many_attempts (with Retry-After) when one of its allowances is spent. */
  async admit(a: SignInAttempt): Promise<void> {
    const keys = a.device !== null ? [this.deviceKey(a.device)] : [this.accountKey(a.email), this.addressKey(a.ip)];
    // One transaction per key, side by side: the account's and the address's keys hash to different slots of a
    // Redis Cluster, where one transaction cannot span them.
    const counted = await Promise.all(
      keys.map((k) => this.redis.multi().incr(k).expire(k, this.windowS, 'NX').ttl(k).exec()),
    );
    for (const replies of counted) {
      const [countErr, count] = replies?.[0] ?? [new Error('the sign-in count was not taken')];
      const ttl = Number(replies?.[2]?.[1]);
      if (countErr) throw countErr;
      if (Number(count) > this.limit) throw errors.tooManyAttempts(ttl > 0 ? ttl : this.windowS);
    }
  }

  /**
   * A correct password. Through a device cookie: that device's failures are forgiven (the untrusted allowance stays
   * as it is, whoever spent it). Otherwise: the account's failures are forgiven, and the address's count no longer
   * includes this attempt.
   */
  async succeeded(a: SignInAttempt): Promise<void> {
    if (a.device !== null) {
      await this.redis.del(this.deviceKey(a.device));
      return;
    }
    // Only a count that still exists is taken back: one that expired meanwhile must not go below zero.
    await Promise.all([this.redis.del(this.accountKey(a.email)), this.redis.eval(TAKE_BACK, 1, this.addressKey(a.ip))]);
  }
}
