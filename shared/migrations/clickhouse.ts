import { selectRows, type Analytics } from '../analytics/analytics.js';
import { CLICKHOUSE_MIGRATIONS } from '../paths.js';
import { runMigrations, schemaVersion, type AppliedMigration, type MigrationSession, type SchemaVersion } from './runner.js';

/** Splits a ClickHouse migration into statements (one per `;` at a line end, a trailing comment allowed); the HTTP interface takes one at a time. */
export function splitStatements(script: string): string[] {
  return script
    .split(/;[ \t]*(?:--[^\n]*)?$/m)
    .map((statement) => statement.replace(/^\s*--.*$/gm, '').trim())
    .filter(Boolean);
}

/** The ClickHouse side of a migration run: statements one at a time, the record after them. */
function clickhouseSession({ client }: Analytics): MigrationSession {
  return {
    failureNote:
      'ClickHouse DDL is not transactional: the statements of this migration before the failing one stay applied, and the migration is not recorded. Migrations are written to be run again (IF NOT EXISTS), so the next start, once the cause is fixed, runs it again from its first statement.',
    async createTable() {
      await client.command({
        query: `CREATE TABLE IF NOT EXISTS schema_migrations (
      version String,
      name String,
      checksum String,
      applied_at DateTime64(3, 'UTC') DEFAULT now64(3)
    ) ENGINE = ReplacingMergeTree(applied_at) ORDER BY version`,
      });
    },
    async applied() {
      return selectRows<AppliedMigration>(client, 'SELECT version, checksum FROM schema_migrations FINAL', {});
    },
    async apply(migration) {
      for (const statement of splitStatements(migration.sql)) await client.command({ query: statement });
    },
    async record(migration) {
      await client.insert({
        table: 'schema_migrations',
        values: [{ version: migration.version, name: migration.name, checksum: migration.checksum }],
        format: 'JSONEachRow',
      });
    },
  };
}

/**
 * Applies pending `clickhouse/migrations`. Statements are idempotent (IF NOT EXISTS), so two
 * nodes starting at once at worst both run them; the record is written after success. ClickHouse
 * has no transaction to lock, so a run is guarded by nothing more.
 */
export async function migrateAnalytics(analytics: Analytics, dir = CLICKHOUSE_MIGRATIONS): Promise<string[]> {
  return runMigrations({ exclusive: (run) => run(clickhouseSession(analytics)) }, dir);
}

/** The schema version of the ClickHouse store: the newest migration applied (null before any) and the newest this build has. */
export async function analyticsSchemaVersion({ client }: Pick<Analytics, 'client'>, dir = CLICKHOUSE_MIGRATIONS): Promise<SchemaVersion> {
  const [exists] = await selectRows<{ n: number | string }>(
    client,
    "SELECT count() AS n FROM system.tables WHERE database = currentDatabase() AND name = 'schema_migrations'",
    {},
  );
  const applied =
    Number(exists?.n) > 0
      ? ((await selectRows<{ version: string }>(client, 'SELECT max(version) AS version FROM schema_migrations FINAL', {}))[0]?.version ?? '')
      : '';
  return schemaVersion(applied === '' ? null : applied, dir);
}
