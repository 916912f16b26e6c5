import { randomBytes } from 'node:crypto';
import { isSealed, SecretBox, SecretBoxError, secretAad } from './secret-box';

const k1 = { id: 'k1', key: randomBytes(32) };
const k2 = { id: 'k2', key: randomBytes(32) };
const aad = secretAad('callback-secret', 'ws_a');

describe('SecretBox', () => {
  it('seals under the first key with the key id in the value, and opens under any listed key', () => {
    const old = new SecretBox([k1]);
    const sealed = old.seal('whsec_plain', aad);
    expect(sealed).toMatch(/^v1:k1:[A-Za-z0-9_-]{16}:[A-Za-z0-9_-]+$/);
    expect(sealed).not.toContain('whsec_plain');
    expect(old.seal('whsec_plain', aad)).not.toBe(sealed); // a fresh IV each time
    const rotated = new SecretBox([k2, k1]);
    expect(rotated.open(sealed, aad)).toBe('whsec_plain');
    expect(rotated.isCurrent(sealed)).toBe(false);
    expect(rotated.isCurrent(rotated.seal('x', aad))).toBe(true);
    expect(() => new SecretBox([k2]).open(sealed, aad)).toThrow(/key "k1", which ENCRYPTION_KEYS does not list/);
  });

  it('refuses a value moved to another row or purpose, or altered', () => {
    const box = new SecretBox([k1]);
    const sealed = box.seal('sk-live', secretAad('channel.secret', 'ch_a'));
    expect(() => box.open(sealed, secretAad('channel.secret', 'ch_b'))).toThrow(SecretBoxError);
    expect(() => box.open(sealed, secretAad('callback-secret', 'ch_a'))).toThrow(SecretBoxError);
    const [v, kid, iv, ct] = sealed.split(':') as [string, string, string, string];
    const flipped = Buffer.from(ct, 'base64url');
    flipped[0]! ^= 1;
    expect(() => box.open([v, kid, iv, flipped.toString('base64url')].join(':'), aad)).toThrow(SecretBoxError);
    expect(() => box.open(`${sealed}:x`, secretAad('channel.secret', 'ch_a'))).toThrow(/not a sealed value/);
    expect(box.open(sealed, secretAad('channel.secret', 'ch_a'))).toBe('sk-live');
  });

  it('reads a value stored before sealing as it is', () => {
    const box = new SecretBox([k1]);
    expect(isSealed('whsec_abc')).toBe(false);
    expect(box.open('whsec_abc', aad)).toBe('whsec_abc');
    expect(box.isCurrent('whsec_abc')).toBe(false);
  });
});
