import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { loadSecretBox } from './keys.js';
import { SecretsError, keyId, parseKey } from './secret-box.js';

const log = pino({ level: 'silent' });
const keyFileIn = () => join(mkdtempSync(join(tmpdir(), 'linktrack-keys-')), 'data', 'secrets.key');

describe('the secrets key of a process', () => {
  it('embedded without SECRETS_KEY: generated on first start into the key file, mode 0600, and reused after', () => {
    const keyFile = keyFileIn();
    const first = loadSecretBox({ key: undefined, previous: [], keyFile }, log);
    const stored = readFileSync(keyFile, 'utf8');
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(first.currentKeyId).toBe(keyId(parseKey(stored)!));
    const sealed = first.seal('whsec_x', 'webhook:1');

    const second = loadSecretBox({ key: undefined, previous: [], keyFile }, log);
    expect(readFileSync(keyFile, 'utf8')).toBe(stored);
    expect(second.currentKeyId).toBe(first.currentKeyId);
    expect(second.open(sealed, 'webhook:1')).toBe('whsec_x');
  });

  it('with SECRETS_KEY it seals with that key, and still opens what the key file sealed (moving off the generated key)', () => {
    const keyFile = keyFileIn();
    const generated = loadSecretBox({ key: undefined, previous: [], keyFile }, log);
    const sealed = generated.seal('whsec_y', 'webhook:2');
    const key = Buffer.alloc(32, 9);
    const configured = loadSecretBox({ key, previous: [], keyFile }, log);
    expect(configured.currentKeyId).toBe(keyId(key));
    expect(configured.keyIds).toEqual([keyId(key), generated.currentKeyId]);
    expect(configured.open(sealed, 'webhook:2')).toBe('whsec_y');
  });

  it('with SECRETS_KEY and no key file, none is created', () => {
    const keyFile = keyFileIn();
    loadSecretBox({ key: Buffer.alloc(32, 1), previous: [], keyFile }, log);
    expect(() => statSync(keyFile)).toThrow(/ENOENT/);
  });

  it('a key file that holds no key stops the start with a clear error, and is left as it is', () => {
    const keyFile = keyFileIn();
    loadSecretBox({ key: undefined, previous: [], keyFile }, log);
    writeFileSync(keyFile, 'not a key\n');
    expect(() => loadSecretBox({ key: undefined, previous: [], keyFile }, log)).toThrow(SecretsError);
    expect(() => loadSecretBox({ key: undefined, previous: [], keyFile }, log)).toThrow(`${keyFile} does not hold a secrets key`);
    expect(readFileSync(keyFile, 'utf8')).toBe('not a key\n');
  });

  it('without a key or a key file (a Postgres shared by an ingest or enricher node) the box has no key and says so when used', () => {
    const box = loadSecretBox({ key: undefined, previous: [], keyFile: undefined }, log);
    expect(box.currentKeyId).toBeUndefined();
    expect(() => box.seal('whsec_z', 'webhook:3')).toThrow(/no secrets key: set SECRETS_KEY/);
  });
});
