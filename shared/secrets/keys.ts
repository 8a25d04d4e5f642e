import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import { SecretsError, createSecretBox, generateKey, keyId, parseKey, type SecretBox } from './secret-box.js';

/** The key of a key file, or undefined when there is none. Throws SecretsError when the file holds no key. */
function readKeyFile(path: string, log: Logger): Buffer | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const key = parseKey(text);
  if (!key) throw new SecretsError(`${path} does not hold a secrets key (32 bytes as base64 or 64 hex digits): restore it, or set SECRETS_KEY`);
  const mode = statSync(path).mode & 0o777;
  if (mode & 0o077) log.warn({ path, mode: mode.toString(8) }, 'the secrets key file is readable by other users than its owner: chmod 600 it');
  return key;
}

/** Creates a key file holding a new key, mode 0600; never overwrites one (`wx`). */
function createKeyFile(path: string, log: Logger): Buffer {
  mkdirSync(dirname(path), { recursive: true });
  const text = generateKey();
  writeFileSync(path, `${text}\n`, { mode: 0o600, flag: 'wx' });
  const key = parseKey(text)!;
  log.info({ path, key_id: keyId(key) }, 'generated the secrets key (keep this file with the data: the webhook secrets cannot be read without it)');
  return key;
}

/**
 * The secret box of a process, from the configuration: SECRETS_KEY seals, it and
 * SECRETS_KEY_PREVIOUS open. Without SECRETS_KEY, on the embedded stores, the key of
 * `DATA_DIR/secrets.key` seals (generated on first start); with SECRETS_KEY, a key file found
 * there still opens what it sealed (until the start's re-encryption has moved it all). Without
 * either (a process sharing a Postgres but running neither the api nor the worker role) the box has
 * no key and every use throws.
 */
export function loadSecretBox(secrets: Config['secrets'], log: Logger): SecretBox {
  const { key, previous, keyFile } = secrets;
  if (key) {
    const fileKey = keyFile ? readKeyFile(keyFile, log) : undefined;
    return createSecretBox(key, fileKey ? [...previous, fileKey] : previous);
  }
  if (keyFile) return createSecretBox(readKeyFile(keyFile, log) ?? createKeyFile(keyFile, log), previous);
  return createSecretBox(undefined);
}
