import type { Analytics } from '../analytics/analytics.js';

/** A path as a ClickHouse string literal. */
const literal = (path: string) => `'${path.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;

/**
 * The analytics store's side of a backup: ClickHouse's own BACKUP and RESTORE of the database, to
 * and from one archive file (chDB writes and reads only under chdbBackupsDir, its allowed path).
 * BACKUP copies every table, the rollups and `schema_migrations` included; RESTORE creates them in
 * a store that has none, the materialized views without running them again (the rollups are
 * restored as they were, not recounted).
 */
export function analyticsBackupRepository({ client }: Pick<Analytics, 'client'>) {
  const database = async () => {
    const result = await client.query({ query: 'SELECT currentDatabase() AS name', format: 'JSONEachRow' });
    return (await result.json<{ name: string }>())[0]!.name;
  };
  return {
    /** Writes the database into the archive `file` (a `.tar` under chdbBackupsDir, which must not exist). */
    async backup(file: string): Promise<void> {
      await client.command({ query: `BACKUP DATABASE ${await database()} TO File(${literal(file)})` });
    },
    /** Creates the database's tables from the archive `file` (under chdbBackupsDir), with their rows. */
    async restore(file: string): Promise<void> {
      await client.command({ query: `RESTORE DATABASE ${await database()} FROM File(${literal(file)}) SETTINGS allow_non_empty_tables = false` });
    },
    /** Rows of each table of the database (the manifest records them; a restore is checked against them). */
    async rowCounts(): Promise<Record<string, number>> {
      const result = await client.query({
        query: "SELECT name, toUInt64(total_rows) AS rows FROM system.tables WHERE database = currentDatabase() AND engine LIKE '%MergeTree' ORDER BY name",
        format: 'JSONEachRow',
      });
      return Object.fromEntries((await result.json<{ name: string; rows: number }>()).map(({ name, rows }) => [name, Number(rows)]));
    },
  };
}

export type AnalyticsBackupRepository = ReturnType<typeof analyticsBackupRepository>;
