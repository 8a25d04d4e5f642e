import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SecretsError, createSecretBox, generateKey, keyId, parseKey } from './secret-box.js';

const keyA = randomBytes(32);
const keyB = randomBytes(32);
const SECRET = `whsec_${'s'.repeat(43)}`;

describe('secret box (AES-256-GCM)', () => {
  it('seals to v1:<key id>:…, never containing the plaintext, with a fresh IV each time, and opens it again', () => {
    const box = createSecretBox(keyA);
    const one = box.seal(SECRET, 'webhook:1');
    const two = box.seal(SECRET, 'webhook:1');
    expect(one).toMatch(new RegExp(`^v1:${keyId(keyA).replace(/[-]/g, '\\-')}:[A-Za-z0-9_-]{16}:[A-Za-z0-9_-]+:[A-Za-z0-9_-]{22}$`));
    expect(one).not.toContain(SECRET);
    expect(one).not.toContain('s'.repeat(8));
    expect(one.split(':')[2]).not.toBe(two.split(':')[2]);
    expect(one).not.toBe(two);
    expect(box.open(one, 'webhook:1')).toBe(SECRET);
    expect(box.open(two, 'webhook:1')).toBe(SECRET);
    expect(box.keyIdOf(one)).toBe(keyId(keyA));
    expect(box.keyIdOf(SECRET)).toBeUndefined();
  });

  it('a wrong key gives a clear error naming the key ids, not garbage', () => {
    const sealed = createSecretBox(keyA).seal(SECRET, 'webhook:1');
    const other = createSecretBox(keyB);
    expect(() => other.open(sealed, 'webhook:1')).toThrow(SecretsError);
    expect(() => other.open(sealed, 'webhook:1')).toThrow(
      `sealed with key ${keyId(keyA)}, which this process does not have (SECRETS_KEY is key ${keyId(keyB)}): add the key it was sealed with to SECRETS_KEY_PREVIOUS`,
    );
  });

  it('opens values of a previous key and seals only with the current one (rotation)', () => {
    const old = createSecretBox(keyA).seal(SECRET, 'webhook:1');
    const rotated = createSecretBox(keyB, [keyA]);
    expect(rotated.currentKeyId).toBe(keyId(keyB));
    expect(rotated.keyIds).toEqual([keyId(keyB), keyId(keyA)]);
    expect(rotated.open(old, 'webhook:1')).toBe(SECRET);
    expect(rotated.keyIdOf(rotated.seal(SECRET, 'webhook:1'))).toBe(keyId(keyB));
  });

  it('refuses a value altered, or moved to another record, as failed authentication', () => {
    const box = createSecretBox(keyA);
    const sealed = box.seal(SECRET, 'webhook:1');
    expect(() => box.open(sealed, 'webhook:2')).toThrow(/failed authentication under key .*: it was altered, or sealed for another record/);
    const parts = sealed.split(':');
    const body = Buffer.from(parts[3]!, 'base64url');
    body[0] = body[0]! ^ 1;
    parts[3] = body.toString('base64url');
    expect(() => box.open(parts.join(':'), 'webhook:1')).toThrow(/failed authentication/);
  });

  it('refuses plaintext and a box without a key, with the reason', () => {
    expect(() => createSecretBox(keyA).open(SECRET, 'webhook:1')).toThrow(/is not sealed/);
    const none = createSecretBox(undefined);
    expect(none.currentKeyId).toBeUndefined();
    expect(() => none.seal(SECRET, 'webhook:1')).toThrow(/this process has no secrets key: set SECRETS_KEY/);
    expect(() => none.open(createSecretBox(keyA).seal(SECRET, 'webhook:1'), 'webhook:1')).toThrow(/no secrets key/);
  });

  it('reads keys as base64, base64url or hex of 32 bytes, and nothing else', () => {
    const key = randomBytes(32);
    expect(parseKey(key.toString('base64'))).toEqual(key);
    expect(parseKey(key.toString('base64url'))).toEqual(key);
    expect(parseKey(` ${key.toString('hex')}\n`)).toEqual(key);
    expect(parseKey(generateKey())).toHaveLength(32);
    expect(parseKey(randomBytes(16).toString('base64'))).toBeUndefined();
    expect(parseKey(randomBytes(33).toString('base64'))).toBeUndefined();
    expect(parseKey('correct horse battery staple correct horse b')).toBeUndefined();
    expect(parseKey('')).toBeUndefined();
  });
});
