import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '../context.js';
import { MigrationChecksumError, MigrationFailedError, pendingMigrations, readMigrations } from './runner.js';
import { CLICKHOUSE_MIGRATIONS } from '../paths.js';
import { closeContext, createTestContext, uniqueName } from '#tests/support/context.js';
import { migrateAnalytics } from './clickhouse.js';

let context: Context;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  context = await createTestContext();
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

afterAll(async () => {
  await closeContext(context);
});

async function rows<T>(query: string, params: Record<string, unknown> = {}): Promise<T[]> {
  const result = await context.analytics.client.query({ query, query_params: params, format: 'JSONEachRow' });
  return result.json<T>();
}

async function applied(): Promise<{ version: string; name: string; checksum: string }[]> {
  return rows('SELECT version, name, checksum FROM schema_migrations FINAL ORDER BY version');
}

async function tableExists(table: string): Promise<boolean> {
  const found = await rows<{ n: number }>('SELECT count() AS n FROM system.tables WHERE database = currentDatabase() AND name = {table:String}', { table });
  return Number(found[0]?.n) === 1;
}

/**
 * A temp copy of the project's ClickHouse migrations (already applied, same checksums) plus extra
 * files. Test migrations use versions 99xx and tables of unique names; whatever they record or
 * create is removed after the test, so the shared schema_migrations keeps only real migrations.
 */
function migrationsDir(extra: Record<string, string>): { dir: string; write: (files: Record<string, string>) => void } {
  const dir = mkdtempSync(join(tmpdir(), 'linktrack-ch-migrations-'));
  cpSync(CLICKHOUSE_MIGRATIONS, dir, { recursive: true });
  const write = (files: Record<string, string>) => {
    for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text);
  };
  write(extra);
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  return { dir, write };
}

function forget(version: string, table: string): void {
  cleanups.push(async () => {
    await context.analytics.client.command({ query: `DROP TABLE IF EXISTS ${table}` });
    await context.analytics.client.command({
      query: 'ALTER TABLE schema_migrations DELETE WHERE version = {version:String}',
      query_params: { version },
      clickhouse_settings: { mutations_sync: '2' },
    });
  });
}

/**
 * Applies a project migration again, as test version `version`, on tables the views have already
 * filled (as on an install that ran an earlier version of it); the record goes after the test.
 */
async function rerun(file: string, version: string): Promise<string[]> {
  const { dir } = migrationsDir({ [`${version}_refill.sql`]: readFileSync(join(CLICKHOUSE_MIGRATIONS, file), 'utf8') });
  cleanups.push(async () => {
    await context.analytics.client.command({
      query: 'ALTER TABLE schema_migrations DELETE WHERE version = {version:String}',
      query_params: { version },
      clickhouse_settings: { mutations_sync: '2' },
    });
  });
  return migrateAnalytics(context.analytics, dir);
}

describe(`migrateAnalytics (${process.env.CLICKHOUSE_URL ? 'clickhouse' : 'chdb'})`, () => {
  it('records every project migration in schema_migrations with its checksum', async () => {
    const files = readMigrations(CLICKHOUSE_MIGRATIONS);
    expect(files.map((file) => file.version)).toContain('0001');
    const records = await applied();
    for (const file of files) {
      expect(records).toContainEqual({ version: file.version, name: file.name, checksum: file.checksum });
    }
  });

  it('applies nothing when run again and records nothing twice', async () => {
    expect(await migrateAnalytics(context.analytics)).toEqual([]);
    expect(await migrateAnalytics(context.analytics)).toEqual([]);
    const counts = await rows<{ version: string; n: number }>('SELECT version, count() AS n FROM schema_migrations FINAL GROUP BY version');
    expect(counts.every((row) => Number(row.n) === 1)).toBe(true);
  });

  it('refuses with MigrationChecksumError when an applied migration was edited, before applying anything', async () => {
    const table = uniqueName('mig_never').replace(/-/g, '_');
    const { dir, write } = migrationsDir({
      '9901_never.sql': `CREATE TABLE IF NOT EXISTS ${table} (id UInt32) ENGINE = MergeTree ORDER BY id;\n`,
    });
    forget('9901', table);
    const original = readFileSync(join(CLICKHOUSE_MIGRATIONS, '0001_visits.sql'), 'utf8');
    write({ '0001_visits.sql': original.replace("LowCardinality(String) DEFAULT ''", "String DEFAULT ''") });
    expect(() => pendingMigrations(readMigrations(dir), [])).not.toThrow();
    expect(() => pendingMigrations(readMigrations(dir), readMigrations(CLICKHOUSE_MIGRATIONS))).toThrow(MigrationChecksumError);
    const failure = migrateAnalytics(context.analytics, dir);
    await expect(failure).rejects.toBeInstanceOf(MigrationChecksumError);
    await expect(failure).rejects.toThrow('migration 0001_visits was changed after it was applied');
    expect(await tableExists(table)).toBe(false);
    expect((await applied()).map((row) => row.version)).not.toContain('9901');
  });

  it('propagates the error of a failing migration, records nothing and creates no table', async () => {
    const table = uniqueName('mig_broken').replace(/-/g, '_');
    const { dir } = migrationsDir({
      '9902_broken.sql': `CREATE TABLE IF NOT EXISTS ${table} (id UInt32) ENGINE = NoSuchEngine ORDER BY id;\n`,
    });
    forget('9902', table);
    await expect(migrateAnalytics(context.analytics, dir)).rejects.toThrow(/NoSuchEngine|engine/i);
    expect(await tableExists(table)).toBe(false);
    expect((await applied()).map((row) => row.version)).not.toContain('9902');
  });

  it('does not record a migration that failed midway, and completes it on a rerun once fixed', async () => {
    // ClickHouse DDL is not transactional: the statements before the failing one stay applied,
    // which is why migrations are written idempotently (IF NOT EXISTS) and recorded only after success.
    const table = uniqueName('mig_partial').replace(/-/g, '_');
    const first = `CREATE TABLE IF NOT EXISTS ${table} (id UInt32) ENGINE = MergeTree ORDER BY id;\n`;
    const { dir, write } = migrationsDir({
      '9903_partial.sql': `${first}ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS label NoSuchType;\n`,
    });
    forget('9903', table);
    const failure = migrateAnalytics(context.analytics, dir);
    await expect(failure).rejects.toBeInstanceOf(MigrationFailedError);
    await expect(failure).rejects.toThrow(/^migration 9903_partial failed: .*NoSuchType.*not transactional.*runs it again from its first statement/s);
    expect((await applied()).map((row) => row.version)).not.toContain('9903');
    write({ '9903_partial.sql': `${first}ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS label String;\n` });
    expect(await migrateAnalytics(context.analytics, dir)).toEqual(['9903_partial']);
    expect((await applied()).map((row) => row.version)).toContain('9903');
    const columns = await rows<{ name: string }>(
      'SELECT name FROM system.columns WHERE database = currentDatabase() AND table = {table:String} ORDER BY position',
      { table },
    );
    expect(columns.map((column) => column.name)).toEqual(['id', 'label']);
  });
});

/** A visit row of an owner's subdomain, for the rollup refills. */
const rollupVisit = (owner: string, subdomain: string, extra: Record<string, unknown>) => ({
  visit_id: uuidv7(),
  ts: '2025-03-04 05:06:07.089',
  kind: 'visit',
  owner_id: owner,
  subdomain,
  link_id: 'link-1',
  slug: 'promo',
  ip_public: '203.0.113.7',
  ...extra,
});

describe('0004_stats_visitors_sketch', () => {
  it('refills the rebuilt series rollups from the visits stored before it, once each, and the views count the visits after it', async () => {
    const owner = uniqueName('refill');
    const subdomain = uniqueName('refill');
    const visit = (visitor: string, extra: Record<string, unknown> = {}) => rollupVisit(owner, subdomain, { visitor_hash: visitor, ...extra });
    const first = visit('h1');
    // A newer version of the first visit (a beacon's signals merged in) is the same visit. Inserted in
    // one block, it replaces version 0 at once (as a merge of parts would later): the refill must
    // still count the visit.
    await context.analytics.client.insert({
      table: 'visits',
      values: [first, visit('h2'), visit('h1'), { ...first, version: 1, timezone: 'Europe/Paris' }],
      format: 'JSONEachRow',
    });
    const figures = async (table: string) =>
      (
        await rows<{ visits: number; visitors: number }>(
          `SELECT toUInt64(sum(visits)) AS visits, toUInt64(uniqCombinedMerge(12)(visitors)) AS visitors FROM ${table}
           WHERE owner_id = {owner:String} AND scope = 'subdomain' AND scope_id = {subdomain:String}`,
          { owner, subdomain },
        )
      ).map((row) => ({ visits: Number(row.visits), visitors: Number(row.visitors) }));

    expect(await rerun('0004_stats_visitors_sketch.sql', '9904')).toEqual(['9904_refill']);
    expect(await figures('stats_series')).toEqual([{ visits: 3, visitors: 2 }]);
    expect(await figures('stats_series_daily')).toEqual([{ visits: 3, visitors: 2 }]);
    expect(await tableExists('stats_series_refill_before')).toBe(false);

    await context.analytics.client.insert({ table: 'visits', values: [visit('h3')], format: 'JSONEachRow' });
    expect(await figures('stats_series')).toEqual([{ visits: 4, visitors: 3 }]);
    expect(await figures('stats_series_daily')).toEqual([{ visits: 4, visitors: 3 }]);
  });
});

describe('0005_stats_dims_refill', () => {
  it('refills the rebuilt dimension rollups from the visits stored before it, once each, and the views count the visits after it', async () => {
    const owner = uniqueName('dims');
    const subdomain = uniqueName('dims');
    const visit = (country: string, extra: Record<string, unknown> = {}) => rollupVisit(owner, subdomain, { country, ...extra });
    const first = visit('DE');
    // The newer version of the first visit replaces version 0 in its block; a bot visit and a click
    // count in the series but not in the breakdowns.
    await context.analytics.client.insert({
      table: 'visits',
      values: [first, visit('FR'), visit('DE'), { ...first, version: 1, timezone: 'Europe/Paris' }, visit('US', { kind: 'bot' })],
      format: 'JSONEachRow',
    });
    const countries = async (table: string) =>
      (
        await rows<{ value: string; visits: number }>(
          `SELECT value, toUInt64(sum(visits)) AS visits FROM ${table}
           WHERE owner_id = {owner:String} AND subdomain = {subdomain:String} AND dim = 'country' GROUP BY value ORDER BY value`,
          { owner, subdomain },
        )
      ).map((row) => ({ value: row.value, visits: Number(row.visits) }));

    // Stand in for an install where 0003's refill selected nothing (chDB): the rollups lack these visits.
    await context.analytics.client.command({
      query: 'ALTER TABLE stats_dims DELETE WHERE owner_id = {owner:String}',
      query_params: { owner },
      clickhouse_settings: { mutations_sync: '2' },
    });
    await context.analytics.client.command({
      query: 'ALTER TABLE stats_dims_daily DELETE WHERE owner_id = {owner:String}',
      query_params: { owner },
      clickhouse_settings: { mutations_sync: '2' },
    });
    expect(await countries('stats_dims')).toEqual([]);

    expect(await rerun('0005_stats_dims_refill.sql', '9905')).toEqual(['9905_refill']);
    const expected = [
      { value: 'DE', visits: 2 },
      { value: 'FR', visits: 1 },
    ];
    expect(await countries('stats_dims')).toEqual(expected);
    expect(await countries('stats_dims_daily')).toEqual(expected);
    expect(await tableExists('stats_dims_refill_before')).toBe(false);

    await context.analytics.client.insert({ table: 'visits', values: [visit('FR')], format: 'JSONEachRow' });
    const after = [
      { value: 'DE', visits: 2 },
      { value: 'FR', visits: 2 },
    ];
    expect(await countries('stats_dims')).toEqual(after);
    expect(await countries('stats_dims_daily')).toEqual(after);
  });
});

describe('visits table', () => {
  it('is a ReplacingMergeTree partitioned by month and sorted by subdomain, link_id first', async () => {
    const [table] = await rows<{ engine: string; partition_key: string; sorting_key: string; engine_full: string }>(
      "SELECT engine, partition_key, sorting_key, engine_full FROM system.tables WHERE database = currentDatabase() AND name = 'visits'",
    );
    expect(table).toBeDefined();
    expect(table!.engine).toBe('ReplacingMergeTree');
    expect(table!.engine_full).toMatch(/^ReplacingMergeTree\(version\)/);
    expect(table!.partition_key).toBe('toYYYYMM(ts)');
    expect(
      table!.sorting_key
        .split(',')
        .map((column) => column.trim())
        .slice(0, 2),
    ).toEqual(['subdomain', 'link_id']);
  });

  const visit = (subdomain: string, visitId: string, extra: Record<string, unknown> = {}) => ({
    visit_id: visitId,
    ts: '2025-03-04 05:06:07.089',
    kind: 'visit',
    owner_id: 'owner',
    subdomain,
    link_id: 'link-1',
    slug: 'promo',
    ip_public: '203.0.113.7',
    ...extra,
  });

  async function insert(values: Record<string, unknown>[]): Promise<void> {
    await context.analytics.client.insert({ table: 'visits', values, format: 'JSONEachRow' });
  }

  it('collapses rows inserted twice with the same visit_id into one under FINAL', async () => {
    const subdomain = uniqueName('dup');
    const visitId = uuidv7();
    await insert([visit(subdomain, visitId)]);
    await insert([visit(subdomain, visitId, { city: 'again' })]);
    await insert([visit(subdomain, uuidv7())]);
    const final = await rows<{ visit_id: string; n: number }>(
      'SELECT visit_id, count() AS n FROM visits FINAL WHERE subdomain = {subdomain:String} GROUP BY visit_id ORDER BY visit_id',
      { subdomain },
    );
    expect(final).toHaveLength(2);
    expect(final.map((row) => Number(row.n))).toEqual([1, 1]);
    expect(final.map((row) => row.visit_id)).toContain(visitId);
  });

  it('keeps the row of the highest version of a visit under FINAL, whatever the insert order', async () => {
    const subdomain = uniqueName('version');
    const visitId = uuidv7();
    await insert([visit(subdomain, visitId, { version: 2, city: 'newest' })]);
    await insert([visit(subdomain, visitId, { version: 1, city: 'older' })]);
    await insert([visit(subdomain, visitId, { version: 0, city: 'oldest' })]);
    const final = await rows<{ city: string; version: number }>('SELECT city, version FROM visits FINAL WHERE subdomain = {subdomain:String}', { subdomain });
    expect(final).toEqual([{ city: 'newest', version: 2 }]);
  });
});
