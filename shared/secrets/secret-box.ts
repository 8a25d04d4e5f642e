import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * Secrets at rest: AES-256-GCM with a random 12-byte IV per value, the 16-byte tag kept, and the
 * format version and the key's id in front, so that a value names the key that sealed it and keys
 * can rotate (new values under the current key, old ones still opened with a previous key).
 *
 *   v1:<key id>:<iv>:<ciphertext>:<tag>        (the last three base64url)
 *
 * The additional authenticated data binds the version, the key id and the caller's `purpose`
 * (such as `webhook:<id>`): a value copied to another record does not open there.
 */

/** Bytes of a key (AES-256). */
export const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const VERSION = 'v1';
const SEALED = /^v1:([A-Za-z0-9_-]{8}):([A-Za-z0-9_-]{16}):([A-Za-z0-9_-]*):([A-Za-z0-9_-]{22})$/;

/** A value cannot be sealed or opened: no key, a key this process lacks, or a value altered. Never a garbled result. */
export class SecretsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretsError';
  }
}

/**
 * A key as configured: 64 hex digits, or the base64 (or base64url) of 32 bytes, as
 * `openssl rand -base64 32` prints it. Undefined when the text is neither.
 */
export function parseKey(text: string): Buffer | undefined {
  const value = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(value)) return Buffer.from(value, 'hex');
  if (!/^[A-Za-z0-9+/_-]{43}=?$/.test(value)) return undefined;
  const bytes = Buffer.from(value.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  return bytes.length === KEY_BYTES ? bytes : undefined;
}

/** A key's public id: 8 base64url characters of a hash of it (names the key in stored values and logs; reveals nothing of it). */
export function keyId(key: Buffer): string {
  return createHash('sha256').update('linktrack secrets key id\0').update(key).digest('base64url').slice(0, 8);
}

/** A new random key in the base64 form SECRETS_KEY takes. */
export function generateKey(): string {
  return randomBytes(KEY_BYTES).toString('base64');
}

/** Seals and opens values with a process's keys: the current one seals, every one opens. */
export interface SecretBox {
  /** Id of the key new values are sealed with; undefined when this process has no key. */
  readonly currentKeyId: string | undefined;
  /** Ids of every key this process opens values with, the current first. */
  readonly keyIds: string[];
  /** Seals a value for one record (`purpose`, such as `webhook:<id>`) under the current key. */
  seal(plaintext: string, purpose: string): string;
  /** The value sealed for `purpose`; throws SecretsError naming the cause when it cannot be opened. */
  open(stored: string, purpose: string): string;
  /** The id of the key a stored value was sealed with, or undefined when it is not a sealed value (plaintext). */
  keyIdOf(stored: string): string | undefined;
}

/** A box holding the current key (sealing and opening) and previous keys (opening only). Without a current key every use throws. */
export function createSecretBox(current: Buffer | undefined, previous: Buffer[] = []): SecretBox {
  const keys = new Map<string, Buffer>();
  for (const key of current ? [current, ...previous] : []) {
    if (key.length !== KEY_BYTES) throw new SecretsError(`a key must be ${KEY_BYTES} bytes, not ${key.length}`);
    const id = keyId(key);
    if (!keys.has(id)) keys.set(id, key);
  }
  const currentKeyId = current ? keyId(current) : undefined;
  const noKey = () => new SecretsError('this process has no secrets key: set SECRETS_KEY (the api and worker roles need it to read and write webhook secrets)');
  const aad = (id: string, purpose: string) => Buffer.from(`${VERSION}:${id}:${purpose}`, 'utf8');

  return {
    currentKeyId,
    keyIds: [...keys.keys()],
    seal(plaintext, purpose) {
      if (!currentKeyId) throw noKey();
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', keys.get(currentKeyId)!, iv, { authTagLength: TAG_BYTES });
      cipher.setAAD(aad(currentKeyId, purpose));
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return [VERSION, currentKeyId, iv.toString('base64url'), body.toString('base64url'), cipher.getAuthTag().toString('base64url')].join(':');
    },
    open(stored, purpose) {
      const parts = SEALED.exec(stored);
      if (!parts) throw new SecretsError(`the stored value of ${purpose} is not sealed (v1:<key id>:…): plaintext or damaged`);
      const [, id, iv, body, tag] = parts as unknown as [string, string, string, string, string];
      if (keys.size === 0) throw noKey();
      const key = keys.get(id);
      if (!key) {
        throw new SecretsError(
          `the stored value of ${purpose} was sealed with key ${id}, which this process does not have ` +
            `(SECRETS_KEY is key ${currentKeyId}${keys.size > 1 ? `; SECRETS_KEY_PREVIOUS holds ${[...keys.keys()].slice(1).join(', ')}` : ''}): ` +
            'add the key it was sealed with to SECRETS_KEY_PREVIOUS',
        );
      }
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'), { authTagLength: TAG_BYTES });
        decipher.setAAD(aad(id, purpose));
        decipher.setAuthTag(Buffer.from(tag, 'base64url'));
        return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
      } catch {
        throw new SecretsError(`the stored value of ${purpose} failed authentication under key ${id}: it was altered, or sealed for another record`);
      }
    },
    keyIdOf(stored) {
      return SEALED.exec(stored)?.[1];
    },
  };
}
