import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '#shared/config.js';
import { restoreBackup } from './backup.js';
import { BACKUP_FILES, describeFiles, MANIFEST_FILE, manifestOf, type Manifest } from './manifest.js';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'linktrack-restore-checks-'));
  dirs.push(dir);
  return dir;
};

/** A backup folder whose files match its manifest (their content is never read: every check below refuses first). */
async function backupFolder(fields: Partial<Manifest> = {}): Promise<string> {
  const dir = tempDir();
  writeFileSync(join(dir, BACKUP_FILES.database), 'not read');
  writeFileSync(join(dir, BACKUP_FILES.analytics), 'not read');
  const schema = { applied: '0001', expected: '0001', up_to_date: true };
  const manifest = manifestOf({
    build: '2.0.0',
    started_at: new Date().toISOString(),
    took_ms: 1,
    timings: { checkpoint_ms: 0, enricher_paused_ms: 0, database_dump_ms: 0 },
    platform: 'running',
    schema: { database: schema, analytics: schema },
    checkpoint: [],
    analytics_rows: {},
    secrets: { key_id: null, key_file: false },
    files: await describeFiles(dir, [BACKUP_FILES.database, BACKUP_FILES.analytics]),
    ...fields,
  });
  writeFileSync(join(dir, MANIFEST_FILE), JSON.stringify(manifest));
  return dir;
}

/** Restores `source` into a new DATA_DIR with this environment; what it threw, and whether DATA_DIR was created. */
async function restoreInto(source: string, env: Record<string, string> = {}) {
  const dataDir = join(tempDir(), 'data');
  const config = loadConfig({ DATA_DIR: dataDir, ...env });
  const openAnalytics = () => {
    throw new Error('a refused restore opens no store');
  };
  const error = await restoreBackup({ config, openAnalytics, configuredKeyId: env.SECRETS_KEY ? 'set' : undefined }, source).then(
    () => undefined,
    (thrown: Error) => thrown,
  );
  return { error, written: existsSync(dataDir) };
}

describe('npm run restore checks before it writes (restoreBackup)', () => {
  it('refuses a backup whose secrets are sealed with a key the restore is not given, naming the key', async () => {
    const { error, written } = await restoreInto(await backupFolder({ secrets: { key_id: 'k_backup', key_file: false } }));
    expect(error?.message).toMatch(/sealed with the key k_backup, which SECRETS_KEY is not \(it is not set\)/);
    expect(written).toBe(false);
  });

  it("refuses a backup whose schema is newer than this build's migrations", async () => {
    const newer = { applied: '9999', expected: '9999', up_to_date: true };
    const { error, written } = await restoreInto(await backupFolder({ schema: { database: newer, analytics: newer } }));
    expect(error?.message).toMatch(/the backup's database and analytics schema is newer than this build's migrations/);
    expect(written).toBe(false);
  });

  it('refuses a folder without a manifest, and one whose file is missing', async () => {
    const empty = tempDir();
    expect((await restoreInto(empty)).error?.message).toMatch(/holds no manifest\.json: it is not a backup folder/);
    const folder = await backupFolder();
    rmSync(join(folder, BACKUP_FILES.analytics));
    const missing = await restoreInto(folder);
    expect(missing.error?.message).toMatch(/analytics\.tar is missing from .*: the backup is incomplete/);
    expect(missing.written).toBe(false);
  });

  it('refuses a file whose size differs from the manifest (a truncated copy)', async () => {
    const folder = await backupFolder();
    writeFileSync(join(folder, BACKUP_FILES.database), 'not');
    expect((await restoreInto(folder)).error?.message).toMatch(/database\.tar\.gz does not match the manifest \(3 bytes, 8 expected\)/);
  });
});
