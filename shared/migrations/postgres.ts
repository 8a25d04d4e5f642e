import { POSTGRES_MIGRATIONS } from '../paths.js';
import type { Database, ScriptRunner } from '../db/database.js';
import { runMigrations, type AppliedMigration, type MigrationSession } from './runner.js';

/** The Postgres side of a migration run, inside the migration transaction `tx`. */
function postgresSession(tx: ScriptRunner): MigrationSession {
  return {
    async createTable() {
      await tx.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version text PRIMARY KEY,
      name text NOT NULL,
      checksum text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    },
    applied: () => tx.query<AppliedMigration>('SELECT version, checksum FROM schema_migrations'),
    apply: (migration) => tx.exec(migration.sql),
    async record(migration) {
      await tx.query('INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)', [migration.version, migration.name, migration.checksum]);
    },
  };
}

/** Applies pending `postgres/migrations` in one locked transaction; returns the versions applied. */
export async function migrateDatabase(database: Database, dir = POSTGRES_MIGRATIONS): Promise<string[]> {
  return runMigrations({ exclusive: (run) => database.migrateInTransaction((tx) => run(postgresSession(tx))) }, dir);
}
