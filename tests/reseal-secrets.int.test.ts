import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { usersRepository } from '#shared/users/users.repository.js';
import { createDatabase } from '#shared/db/database.js';
import { migrateDatabase } from '#shared/migrations/postgres.js';
import { PROJECT_ROOT } from '#shared/paths.js';
import { createSecretBox, generateKey, keyId, parseKey } from '#shared/secrets/secret-box.js';
import { webhookSecrets } from '#shared/webhooks/secrets.js';

/** The script as an operator runs it, on the embedded stores of `dataDir` (the platform stopped). */
function reseal(dataDir: string, env: Record<string, string>) {
  const run = spawnSync(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'scripts/reseal-secrets.ts')], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, DATABASE_URL: '', REDIS_URL: '', KAFKA_BROKERS: '', CLICKHOUSE_URL: '', SECRETS_KEY_PREVIOUS: '', DATA_DIR: dataDir, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe('scripts/reseal-secrets.ts (key rotation without a restart)', () => {
  it('re-encrypts under the new SECRETS_KEY what a previous key sealed (webhook and TOTP secrets), says 0 are left, and exits 1 when a key is missing', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'linktrack-reseal-'));
    const oldKey = generateKey();
    const newKey = generateKey();
    // An embedded install whose key file is the old key, with one webhook sealed by it.
    writeFileSync(join(dataDir, 'secrets.key'), `${oldKey}\n`, { mode: 0o600 });
    const database = await createDatabase({ kind: 'pglite', dir: join(dataDir, 'pg') });
    const id = randomUUID();
    let before: string;
    let userId: string;
    const totpSecret = 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP';
    try {
      await migrateDatabase(database);
      userId = (await usersRepository(database.db).insertIfAbsent({ email: 'reseal@example.test', passwordHash: 'x', role: 'user' }))!;
      const { columns } = webhookSecrets(createSecretBox(parseKey(oldKey))).issue(id);
      before = columns.secret;
      await database.db
        .insertInto('webhooks')
        .values({ id, owner_id: userId, url: 'https://receiver.example/hook', events: ['link.created'], ...columns })
        .execute();
      // A TOTP secret sealed by the old key, bound to its account as the api role seals it.
      const sealed = createSecretBox(parseKey(oldKey)).seal(totpSecret, `totp:${userId}`);
      await database.db.insertInto('user_totp').values({ user_id: userId, secret: sealed, enabled_at: new Date() }).execute();
    } finally {
      await database.close();
    }
    const newId = keyId(parseKey(newKey)!);

    // The new key configured, the old one given as previous: re-encrypted, nothing left.
    const rotated = reseal(dataDir, { SECRETS_KEY: newKey, SECRETS_KEY_PREVIOUS: oldKey });
    expect(rotated.stderr).toBe('');
    expect(rotated.stdout).toBe(
      `webhook secrets: 1 re-encrypted under key ${newId}; 0 not under it\nTOTP secrets: 1 re-encrypted under key ${newId}; 0 not under it\n`,
    );
    expect(rotated.status).toBe(0);
    // Again: idempotent.
    expect(reseal(dataDir, { SECRETS_KEY: newKey }).stdout).toBe(
      `webhook secrets: 0 re-encrypted under key ${newId}; 0 not under it\nTOTP secrets: 0 re-encrypted under key ${newId}; 0 not under it\n`,
    );

    // A third key without the second: the secret is left as it is, and the exit status says so.
    const wrong = reseal(dataDir, { SECRETS_KEY: generateKey() });
    // The report is a line of its own; the error log line (pino, flushed asynchronously) may come before or after it.
    expect(wrong.stdout).toMatch(
      /^webhook secrets: 0 re-encrypted under key .{8}; 1 not under it \(no configured key opens them: add the key they were sealed with to SECRETS_KEY_PREVIOUS\)$/m,
    );
    expect(wrong.stdout).toMatch(/^TOTP secrets: 0 re-encrypted under key .{8}; 1 not under it$/m);
    expect(wrong.status).toBe(1);

    const check = await createDatabase({ kind: 'pglite', dir: join(dataDir, 'pg') });
    try {
      const row = await check.db.selectFrom('webhooks').select('secret').where('id', '=', id).executeTakeFirstOrThrow();
      expect(row.secret).not.toBe(before!);
      expect(row.secret.startsWith(`v1:${newId}:`)).toBe(true);
      const totp = await check.db.selectFrom('user_totp').select('secret').where('user_id', '=', userId!).executeTakeFirstOrThrow();
      expect(totp.secret.startsWith(`v1:${newId}:`)).toBe(true);
      expect(createSecretBox(parseKey(newKey)).open(totp.secret, `totp:${userId!}`)).toBe(totpSecret);
    } finally {
      await check.close();
    }
  }, 120_000);
});
