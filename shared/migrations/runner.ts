import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** One forward-only migration file: `NNNN_name.sql`. */
export interface MigrationFile {
  version: string;
  name: string;
  sql: string;
  checksum: string;
}

/** Reads the numbered SQL files of a migrations folder in order. */
export function readMigrations(dir: string): MigrationFile[] {
  return readdirSync(dir)
    .filter((file) => /^\d{4}_[a-z0-9_]+\.sql$/.test(file))
    .sort()
    .map((file) => {
      const sql = readFileSync(join(dir, file), 'utf8');
      return {
        version: file.slice(0, 4),
        name: file.slice(5, -4),
        sql,
        checksum: createHash('sha256').update(sql).digest('hex'),
      };
    });
}

/** Thrown when an applied migration's file changed since it ran: forward-only means never edit. */
export class MigrationChecksumError extends Error {
  constructor(version: string, name: string) {
    super(`migration ${version}_${name} was changed after it was applied; add a new migration instead`);
    this.name = 'MigrationChecksumError';
  }
}

/**
 * Thrown when a migration's SQL fails: names the migration and carries the store's own message, so
 * the log says which file failed and why. `note` tells the operator what state the store is in.
 */
export class MigrationFailedError extends Error {
  constructor(
    readonly migration: string,
    cause: unknown,
    note: string,
  ) {
    super(`migration ${migration} failed: ${cause instanceof Error ? cause.message : String(cause)}. ${note}`, { cause });
    this.name = 'MigrationFailedError';
  }
}

/** The newest version of a migrations folder: what this build expects a store to have applied. */
export function latestVersion(dir: string): string | null {
  return readMigrations(dir).at(-1)?.version ?? null;
}

/** Returns the migrations not yet applied, refusing if an applied one was edited. */
export function pendingMigrations(files: MigrationFile[], applied: AppliedMigration[]): MigrationFile[] {
  const done = new Map(applied.map((row) => [row.version, row.checksum]));
  for (const file of files) {
    const checksum = done.get(file.version);
    if (checksum !== undefined && checksum !== file.checksum) throw new MigrationChecksumError(file.version, file.name);
  }
  return files.filter((file) => !done.has(file.version));
}

/** What a store has recorded of a migration it applied. */
export interface AppliedMigration {
  version: string;
  checksum: string;
}

/** One store's side of a migration run: its `schema_migrations` table and how it runs a file. */
export interface MigrationSession {
  /** Creates the store's `schema_migrations` table when it does not exist. */
  createTable(): Promise<void>;
  /** The migrations recorded as applied. */
  applied(): Promise<AppliedMigration[]>;
  /** Runs one migration's SQL. */
  apply(migration: MigrationFile): Promise<void>;
  /** Records one migration as applied, once its SQL succeeded. */
  record(migration: MigrationFile): Promise<void>;
  /** What a failure leaves behind, for the error's message. */
  failureNote: string;
}

/** A store to migrate: `exclusive` runs a whole migration run under the store's guard against a concurrent one. */
export interface MigrationStore {
  exclusive<T>(run: (session: MigrationSession) => Promise<T>): Promise<T>;
}

/**
 * Applies the pending migrations of `dir` to a store, in order, each recorded after it succeeded;
 * refuses (MigrationChecksumError) before applying anything when an applied file was edited, and
 * throws MigrationFailedError (the file, the store's message, what state it left) when one fails.
 * Returns the migrations applied, `NNNN_name` each.
 */
export async function runMigrations(store: MigrationStore, dir: string): Promise<string[]> {
  const files = readMigrations(dir);
  return store.exclusive(async (session) => {
    await session.createTable();
    const pending = pendingMigrations(files, await session.applied());
    for (const migration of pending) {
      try {
        await session.apply(migration);
      } catch (error) {
        throw new MigrationFailedError(`${migration.version}_${migration.name}`, error, session.failureNote);
      }
      await session.record(migration);
    }
    return pending.map((migration) => `${migration.version}_${migration.name}`);
  });
}

/** A store's applied schema version beside the one this build expects. */
export interface SchemaVersion {
  applied: string | null;
  expected: string | null;
  up_to_date: boolean;
}

const expectedByDir = new Map<string, string | null>();

/** Builds a SchemaVersion from the applied version and the build's migrations folder. */
export function schemaVersion(applied: string | null, dir: string): SchemaVersion {
  // The build's files do not change while it runs: read once per folder.
  if (!expectedByDir.has(dir)) expectedByDir.set(dir, latestVersion(dir));
  const expected = expectedByDir.get(dir) ?? null;
  return { applied, expected, up_to_date: applied === expected };
}
