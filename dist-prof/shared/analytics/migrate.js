import { pendingMigrations, readMigrations } from '../migrations.js';
import { CLICKHOUSE_MIGRATIONS } from '../paths.js';
/** Splits a ClickHouse migration into statements (one per `;` at a line end, a trailing comment allowed); the HTTP interface takes one at a time. */
export function splitStatements(script) {
    return script
        .split(/;[ \t]*(?:--[^\n]*)?$/m)
        .map((statement) => statement.replace(/^\s*--.*$/gm, '').trim())
        .filter(Boolean);
}
/**
 * Applies pending `clickhouse/migrations`. Statements are idempotent (IF NOT EXISTS), so two
 * nodes starting at once at worst both run them; the record is written after success.
 */
export async function migrateAnalytics(analytics, dir = CLICKHOUSE_MIGRATIONS) {
    const { client } = analytics;
    await client.command({
        query: `CREATE TABLE IF NOT EXISTS schema_migrations (
      version String,
      name String,
      checksum String,
      applied_at DateTime64(3, 'UTC') DEFAULT now64(3)
    ) ENGINE = ReplacingMergeTree(applied_at) ORDER BY version`,
    });
    const result = await client.query({ query: 'SELECT version, checksum FROM schema_migrations FINAL', format: 'JSONEachRow' });
    const applied = await result.json();
    const pending = pendingMigrations(readMigrations(dir), applied);
    for (const migration of pending) {
        for (const statement of splitStatements(migration.sql))
            await client.command({ query: statement });
        await client.insert({
            table: 'schema_migrations',
            values: [{ version: migration.version, name: migration.name, checksum: migration.checksum }],
            format: 'JSONEachRow',
        });
    }
    return pending.map((migration) => `${migration.version}_${migration.name}`);
}
//# sourceMappingURL=migrate.js.map