import { createHash } from 'node:crypto';
import { createReadStream, existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { SchemaVersion } from '../migrations/runner.js';

/** The name of a backup folder's manifest: written last, so a folder without it is no backup. */
export const MANIFEST_FILE = 'manifest.json';
/** What a backup folder holds besides its manifest. */
export const BACKUP_FILES = {
  /** PGlite's data directory, a gzipped tar (Database.snapshot). */
  database: 'database.tar.gz',
  /** chDB's database, ClickHouse's own BACKUP archive. */
  analytics: 'analytics.tar',
  /** DATA_DIR/secrets.key, when the key lives there (no SECRETS_KEY). */
  secretsKey: 'secrets.key',
} as const;
const FORMAT = 'linktrack-backup';
const FORMAT_VERSION = 1;

/** Where the enricher of a topic stood when the backup was taken: every message below `offset` is in the analytics backup. */
export interface Checkpoint {
  topic: string;
  group: string;
  offset: number;
}

/** The manifest of a backup folder. */
export interface Manifest {
  format: typeof FORMAT;
  format_version: number;
  /** The build that took it (VERSION). */
  build: string;
  /** When the backup began (ISO 8601): what was answered before is in it. */
  started_at: string;
  took_ms: number;
  /**
   * Where the time went: waiting for the edge and the enricher, the enricher's pause (the analytics
   * backup), and the database dump (every statement of the platform waits for it).
   */
  timings: { checkpoint_ms: number; enricher_paused_ms: number; database_dump_ms: number };
  /** Whether the platform ran (the backup was taken by it, over its control socket) or was stopped. */
  platform: 'running' | 'stopped';
  /** The stores' schema versions, as GET /api/v1/status shows them. */
  schema: { database: SchemaVersion; analytics: SchemaVersion };
  /** The message log's positions the analytics backup holds everything below. */
  checkpoint: Checkpoint[];
  /** Rows of each analytics table at the checkpoint. */
  analytics_rows: Record<string, number>;
  /** The key the secrets at rest are sealed with (its id), and whether its file is in the backup. */
  secrets: { key_id: string | null; key_file: boolean };
  files: { path: string; bytes: number; sha256: string }[];
}

/** Thrown when a backup folder cannot be restored or a target cannot take one: the message says why, the command exits 1. */
export class BackupRefusedError extends Error {
  override name = 'BackupRefusedError';
}

/** The sha256 (hex) of a file, streamed. */
export async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** The `files` entries of a manifest for these files of `dir`. */
export async function describeFiles(dir: string, names: string[]): Promise<Manifest['files']> {
  return Promise.all(names.map(async (path) => ({ path, bytes: statSync(join(dir, path)).size, sha256: await sha256Of(join(dir, path)) })));
}

/** The manifest fields that say what was written, before the files are described. */
export function manifestOf(fields: Omit<Manifest, 'format' | 'format_version'>): Manifest {
  return { format: FORMAT, format_version: FORMAT_VERSION, ...fields };
}

/** Refuses a folder that exists and holds anything (`what` names it in the message). */
export function refuseNonEmpty(dir: string, what: string): void {
  if (existsSync(dir) && (!statSync(dir).isDirectory() || readdirSync(dir).length > 0))
    throw new BackupRefusedError(`${what} ${dir} is not empty: give an empty or new folder (nothing was written)`);
}

/**
 * Reads a backup folder's manifest and checks every file it lists against its size and sha256, before
 * anything is restored: a missing, truncated or altered file refuses the whole backup.
 */
export async function verifiedManifest(dir: string): Promise<Manifest> {
  const path = join(dir, MANIFEST_FILE);
  if (!existsSync(path)) throw new BackupRefusedError(`${dir} holds no ${MANIFEST_FILE}: it is not a backup folder, or its backup did not finish`);
  let manifest: Manifest;
  try {
    manifest = JSON.parse(readFileSync(path, 'utf8')) as Manifest;
  } catch (error) {
    throw new BackupRefusedError(`${path} cannot be read: ${(error as Error).message}`);
  }
  if (manifest.format !== FORMAT || manifest.format_version !== FORMAT_VERSION)
    throw new BackupRefusedError(`${path} is not a manifest this build reads (format ${FORMAT} version ${FORMAT_VERSION})`);
  for (const file of manifest.files) {
    const at = join(dir, file.path);
    if (!existsSync(at)) throw new BackupRefusedError(`${file.path} is missing from ${dir}: the backup is incomplete`);
    const bytes = statSync(at).size;
    const sha256 = bytes === file.bytes ? await sha256Of(at) : undefined;
    if (sha256 !== file.sha256)
      throw new BackupRefusedError(
        `${file.path} does not match the manifest (${bytes === file.bytes ? 'sha256 differs' : `${bytes} bytes, ${file.bytes} expected`}): the backup is damaged, nothing was restored`,
      );
  }
  for (const required of [BACKUP_FILES.database, BACKUP_FILES.analytics])
    if (!manifest.files.some((file) => file.path === required)) throw new BackupRefusedError(`the manifest lists no ${required}: the backup is incomplete`);
  return manifest;
}
