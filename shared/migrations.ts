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

/** Returns the migrations not yet applied, refusing if an applied one was edited. */
export function pendingMigrations(files: MigrationFile[], applied: { version: string; checksum: string }[]): MigrationFile[] {
  const done = new Map(applied.map((row) => [row.version, row.checksum]));
  for (const file of files) {
    const checksum = done.get(file.version);
    if (checksum !== undefined && checksum !== file.checksum) throw new MigrationChecksumError(file.version, file.name);
  }
  return files.filter((file) => !done.has(file.version));
}
