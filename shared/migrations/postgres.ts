import { sql } from 'kysely';
import { POSTGRES_MIGRATIONS } from '../paths.js';
import type { Database, ScriptRunner } from '../db/database.js';
import { runMigrations, schemaVersion, type AppliedMigration, type MigrationSession, type SchemaVersion } from './runner.js';

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
    failureNote: 'Nothing of this upgrade was applied: the pending Postgres migrations run in one transaction, which was rolled back.',
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

/** The schema version of a Postgres database: the newest migration applied (null before any) and the newest this build has. */
export async function databaseSchemaVersion(database: Pick<Database, 'db'>, dir = POSTGRES_MIGRATIONS): Promise<SchemaVersion> {
  const exists = await sql<{ table: string | null }>`SELECT to_regclass('schema_migrations')::text AS table`.execute(database.db);
  const applied = exists.rows[0]?.table
    ? ((await sql<{ version: string | null }>`SELECT max(version) AS version FROM schema_migrations`.execute(database.db)).rows[0]?.version ?? null)
    : null;
  return schemaVersion(applied, dir);
}
