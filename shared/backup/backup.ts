import { chmodSync, copyFileSync, createWriteStream, existsSync, mkdirSync, readdirSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip, gunzip } from 'node:zlib';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { chdbBackupsDir, type Analytics } from '../analytics/analytics.js';
import type { Config } from '../config.js';
import { loadPgliteDataDir, type Database } from '../db/database.js';
import type { MessageLog } from '../message-log/message-log.js';
import { behind, logEnds, waitCaughtUp, type GroupOfTopic } from '../message-log/caught-up.js';
import { analyticsSchemaVersion } from '../migrations/clickhouse.js';
import { databaseSchemaVersion } from '../migrations/postgres.js';
import { latestVersion } from '../migrations/runner.js';
import { CLICKHOUSE_MIGRATIONS, POSTGRES_MIGRATIONS } from '../paths.js';
import type { SecretBox } from '../secrets/secret-box.js';
import { VERSION } from '../version.js';
import type { AnalyticsBackupRepository } from './backup.repository.js';
import {
  BACKUP_FILES,
  BackupRefusedError,
  describeFiles,
  manifestOf,
  MANIFEST_FILE,
  refuseNonEmpty,
  verifiedManifest,
  type Checkpoint,
  type Manifest,
} from './manifest.js';

/** How long a backup waits for the edge to hand what it answered to the log, and for the enricher to store it. */
export const CHECKPOINT_WAIT_MS = 30_000;

/** What a backup reads: the one-process stores and, when the platform runs, its edge and its enricher. */
export interface BackupDeps {
  config: Pick<Config, 'secrets' | 'analytics'>;
  db: Database;
  analytics: Analytics;
  /** The analytics store's backup and restore (the composition root builds it). */
  backups: AnalyticsBackupRepository;
  messageLog: MessageLog;
  secrets: Pick<SecretBox, 'currentKeyId'>;
  /** The groups that fill the analytics store from the log (the enricher's). */
  groups: GroupOfTopic[];
  /**
   * The running platform: `settled` resolves true once the edge has handed to the log everything it
   * answered before the call; `pause` stops the enricher after its batch in flight and returns what
   * starts it again. Absent when the platform is stopped: then nothing may wait in the log.
   */
  running?: { settled?: (deadlineMs: number) => Promise<boolean>; pause: () => Promise<() => Promise<void>> };
}

/**
 * Takes a consistent backup of the one-process stores into `target` (an empty or new folder):
 *
 * 1. checkpoint: with the platform running, the edge hands the log every visit and beacon it answered
 *    before the backup began, and the enricher stores everything up to that point of the log (bounded
 *    by CHECKPOINT_WAIT_MS); then it is paused after its batch in flight, so that `visits`, the beacons
 *    and the rollups stand at one point of the log (the checkpoint the manifest records). Redirects go
 *    on meanwhile: the log holds their visits, and the enricher stores them once it runs again.
 * 2. the analytics store: ClickHouse's BACKUP of the database (every table, `schema_migrations` too);
 * 3. the relational store: PGlite's data directory after a checkpoint, while no statement runs;
 * 4. `secrets.key` when the key lives in DATA_DIR; then the manifest, last.
 *
 * A failure removes what it wrote; the enricher runs again in every case.
 */
export async function takeBackup(deps: BackupDeps, target: string): Promise<Manifest> {
  const { db, analytics, backups: repository, messageLog, running, config } = deps;
  if (db.kind !== 'pglite' || !db.snapshot || config.analytics.kind !== 'chdb' || messageLog.kind !== 'lmdb')
    throw new BackupRefusedError(
      'npm run backup backs up the one-process stores (PGlite, chDB, the LMDB log); with DATABASE_URL, CLICKHOUSE_URL or KAFKA_BROKERS use each server\'s tools (docs/operations.md, "Backup and restore, production")',
    );
  refuseNonEmpty(target, 'the backup folder');
  const startedAt = new Date();
  const deadline = startedAt.getTime() + CHECKPOINT_WAIT_MS;
  if (running?.settled && !(await running.settled(deadline)))
    throw new BackupRefusedError(`the edge did not hand its visits to the message log within ${CHECKPOINT_WAIT_MS} ms: no backup was taken`);
  const ends = await logEnds(messageLog, deps.groups);
  if (!running) {
    const waiting = (await behind(messageLog, ends)).filter(({ messages }) => messages > 0);
    if (waiting.length > 0)
      throw new BackupRefusedError(
        `the message log holds ${waiting.map(({ topic, messages }) => `${messages} messages of ${topic}`).join(' and ')} not yet stored: start the platform and take the backup while it runs (its enricher stores them first)`,
      );
  }
  mkdirSync(target, { recursive: true, mode: 0o700 });
  let resume: (() => Promise<void>) | undefined;
  let paused: number | undefined;
  const timings: Manifest['timings'] = { checkpoint_ms: 0, enricher_paused_ms: 0, database_dump_ms: 0 };
  try {
    if (running) {
      // Every message below the ends read above is stored before the enricher pauses.
      if ((await waitCaughtUp(messageLog, ends, deadline, 20)).length > 0)
        throw new BackupRefusedError(`the enricher did not store the visits answered before the backup within ${CHECKPOINT_WAIT_MS} ms: no backup was taken`);
      timings.checkpoint_ms = Date.now() - startedAt.getTime();
      resume = await running.pause();
      paused = Date.now();
    }
    // Where the enricher stands (paused, or stopped with nothing left): the point the backup holds.
    const checkpoint: Checkpoint[] = await Promise.all(
      deps.groups.map(async ({ topic, group }) => ({ topic, group, offset: (await messageLog.positions(topic, group))[0]?.committed ?? 0 })),
    );
    const staging = chdbBackupsDir(config.analytics.dir);
    const staged = join(staging, `backup-${startedAt.getTime()}-${process.pid}.tar`);
    mkdirSync(staging, { recursive: true, mode: 0o700 });
    const analyticsRows = await repository.rowCounts();
    await repository.backup(staged);
    // The analytics store is copied: the enricher stores the visits answered meanwhile.
    await resume?.();
    resume = undefined;
    if (paused) timings.enricher_paused_ms = Date.now() - paused;
    moveFile(staged, join(target, BACKUP_FILES.analytics));
    chmodSync(join(target, BACKUP_FILES.analytics), 0o600);
    const dumped = Date.now();
    const tar = await db.snapshot();
    timings.database_dump_ms = Date.now() - dumped;
    await pipeline(Readable.fromWeb(tar.stream() as never), createGzip(), createWriteStream(join(target, BACKUP_FILES.database), { mode: 0o600 }));
    const files: string[] = [BACKUP_FILES.analytics, BACKUP_FILES.database];
    const keyFile = deps.config.secrets.keyFile;
    const keyFileKept = !deps.config.secrets.key && keyFile !== undefined && existsSync(keyFile);
    if (keyFileKept) {
      copyFileSync(keyFile, join(target, BACKUP_FILES.secretsKey));
      files.push(BACKUP_FILES.secretsKey);
    }
    const [database, analyticsSchema] = await Promise.all([databaseSchemaVersion(db), analyticsSchemaVersion(analytics)]);
    const manifest = manifestOf({
      build: VERSION,
      started_at: startedAt.toISOString(),
      took_ms: Date.now() - startedAt.getTime(),
      timings,
      platform: running ? 'running' : 'stopped',
      schema: { database, analytics: analyticsSchema },
      checkpoint,
      analytics_rows: analyticsRows,
      secrets: { key_id: deps.secrets.currentKeyId ?? null, key_file: keyFileKept },
      files: await describeFiles(target, files),
    });
    writeFileSync(join(target, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
    return manifest;
  } catch (error) {
    for (const name of readdirSync(target)) rmSync(join(target, name), { recursive: true, force: true });
    throw error;
  } finally {
    await resume?.();
  }
}

/** Moves a file, across file systems too (the backup folder may be on another disk than DATA_DIR). */
function moveFile(from: string, to: string): void {
  try {
    renameSync(from, to);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
    copyFileSync(from, to);
    unlinkSync(from);
  }
}

/** What a restore needs: the configuration of the (empty) DATA_DIR it writes, and the analytics client it opens there. */
export interface RestoreDeps {
  config: Pick<Config, 'dataDir' | 'database' | 'analytics' | 'secrets'>;
  /** Opens the analytics store of the new DATA_DIR (after the database is written), with its backup repository. */
  openAnalytics: () => { backups: AnalyticsBackupRepository; close: () => Promise<void> };
  /** The key id of the configured SECRETS_KEY, if any. */
  configuredKeyId: string | undefined;
}

/**
 * Restores the backup folder `source` into the configured DATA_DIR, which must be empty or new. The
 * manifest's checksums are verified first, and the secrets key checked: nothing is written before.
 * Starting the same or a newer build on the folder then migrates it forward.
 */
export async function restoreBackup(deps: RestoreDeps, source: string): Promise<Manifest> {
  const { config } = deps;
  if (config.database.kind !== 'pglite' || config.analytics.kind !== 'chdb')
    throw new BackupRefusedError(
      'npm run restore writes the one-process stores (PGlite, chDB) under DATA_DIR; with DATABASE_URL or CLICKHOUSE_URL use each server\'s tools (docs/operations.md, "Backup and restore, production")',
    );
  refuseNonEmpty(config.dataDir, 'DATA_DIR');
  const manifest = await verifiedManifest(source);
  const ours = { database: latestVersion(POSTGRES_MIGRATIONS), analytics: latestVersion(CLICKHOUSE_MIGRATIONS) };
  const newer = (['database', 'analytics'] as const).filter((store) => (manifest.schema[store].applied ?? '') > (ours[store] ?? ''));
  if (newer.length > 0)
    throw new BackupRefusedError(
      `the backup's ${newer.join(' and ')} schema is newer than this build's migrations: restore it with the build that took it (${manifest.build}) or a newer one`,
    );
  if (manifest.secrets.key_id && !manifest.secrets.key_file && deps.configuredKeyId !== manifest.secrets.key_id)
    throw new BackupRefusedError(
      `the backup's secrets are sealed with the key ${manifest.secrets.key_id}, which SECRETS_KEY is not${deps.configuredKeyId ? ` (it is ${deps.configuredKeyId})` : ' (it is not set)'}: set SECRETS_KEY to that key, or the webhook and TOTP secrets cannot be opened`,
    );
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  try {
    const tar = await promisify(gunzip)(await readFile(join(source, BACKUP_FILES.database)));
    await loadPgliteDataDir(config.database.dir, new Blob([new Uint8Array(tar)]));
    const staging = chdbBackupsDir(config.analytics.dir);
    mkdirSync(staging, { recursive: true, mode: 0o700 });
    const staged = join(staging, BACKUP_FILES.analytics);
    copyFileSync(join(source, BACKUP_FILES.analytics), staged);
    const analytics = deps.openAnalytics();
    try {
      await analytics.backups.restore(staged);
    } finally {
      await analytics.close();
      rmSync(staged, { force: true });
    }
    if (manifest.secrets.key_file && config.secrets.keyFile) {
      copyFileSync(join(source, BACKUP_FILES.secretsKey), config.secrets.keyFile);
      chmodSync(config.secrets.keyFile, 0o600);
    }
    return manifest;
  } catch (error) {
    for (const name of readdirSync(config.dataDir)) rmSync(join(config.dataDir, name), { recursive: true, force: true });
    throw error;
  }
}
