import { pendingMigrations, readMigrations } from '../migrations.js';
import { POSTGRES_MIGRATIONS } from '../paths.js';
import type { Database } from './database.js';

/** Applies pending `postgres/migrations` in one locked transaction; returns the versions applied. */
export async function migrateDatabase(database: Database, dir = POSTGRES_MIGRATIONS): Promise<string[]> {
  const files = readMigrations(dir);
  return database.migrateInTransaction(async (tx) => {
    await tx.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version text PRIMARY KEY,
      name text NOT NULL,
      checksum text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const applied = await tx.query<{ version: string; checksum: string }>('SELECT version, checksum FROM schema_migrations');
    const pending = pendingMigrations(files, applied);
    for (const migration of pending) {
      await tx.exec(migration.sql);
      await tx.query('INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)', [migration.version, migration.name, migration.checksum]);
    }
    return pending.map((migration) => `${migration.version}_${migration.name}`);
  });
}
