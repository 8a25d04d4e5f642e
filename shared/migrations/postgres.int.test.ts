import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { MigrationChecksumError, MigrationFailedError, readMigrations } from './runner.js';
import { POSTGRES_MIGRATIONS } from '../paths.js';
import { SERVICES_MODE } from '#tests/support/context.js';
import { createFreshDatabase } from '#tests/support/fresh-database.js';
import type { Database } from '../db/database.js';
import { databaseSchemaVersion, migrateDatabase } from './postgres.js';

/** Cleanups of the current test (fresh databases, temp dirs), run after it whatever its outcome. */
const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** An empty database of the mode's kind (fresh PGlite, or a throwaway database on the server), dropped after the test. */
async function freshDatabase(): Promise<Database> {
  const { database, drop } = await createFreshDatabase();
  cleanups.push(drop);
  return database;
}

/** A temp folder of migration files, `{ '0001_a.sql': '...' }`; write more into it with the returned function. */
function migrationsDir(files: Record<string, string>): { dir: string; write: (files: Record<string, string>) => void } {
  const dir = mkdtempSync(join(tmpdir(), 'linktrack-migrations-'));
  const write = (more: Record<string, string>) => {
    for (const [file, text] of Object.entries(more)) writeFileSync(join(dir, file), text);
  };
  write(files);
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  return { dir, write };
}

/** The recorded migrations, or none when the bookkeeping table does not exist (yet). */
async function recorded(database: Database): Promise<{ version: string; name: string; checksum: string }[]> {
  if (!(await tableExists(database, 'schema_migrations'))) return [];
  const result = await sql<{ version: string; name: string; checksum: string }>`
    SELECT version, name, checksum FROM schema_migrations ORDER BY version`.execute(database.db);
  return result.rows;
}

async function tableExists(database: Database, table: string): Promise<boolean> {
  const result = await sql<{ found: string | null }>`SELECT to_regclass(${table})::text AS found`.execute(database.db);
  return result.rows[0]?.found != null;
}

const CREATE_A = 'CREATE TABLE widgets (id int PRIMARY KEY, name text NOT NULL);\n';
const CREATE_B = '-- a second table\nCREATE TABLE gadgets (id int PRIMARY KEY);\nINSERT INTO gadgets VALUES (1), (2);\n';

describe(`migrateDatabase (${SERVICES_MODE ? 'postgres' : 'pglite'})`, () => {
  it('applies the project migrations to an empty database and records each with its checksum', async () => {
    const database = await freshDatabase();
    const files = readMigrations(POSTGRES_MIGRATIONS);
    expect(files.length).toBeGreaterThan(0);
    expect(await migrateDatabase(database)).toEqual(files.map((file) => `${file.version}_${file.name}`));
    expect(await recorded(database)).toEqual(files.map(({ version, name, checksum }) => ({ version, name, checksum })));
    expect(await tableExists(database, 'users')).toBe(true);
    expect(await tableExists(database, 'audit_log')).toBe(true);
  });

  it('applies nothing when run again and leaves the records as they were', async () => {
    const database = await freshDatabase();
    await migrateDatabase(database);
    const before = await sql<{ version: string; applied_at: Date }>`
      SELECT version, applied_at FROM schema_migrations ORDER BY version`.execute(database.db);
    expect(await migrateDatabase(database)).toEqual([]);
    expect(await migrateDatabase(database)).toEqual([]);
    const after = await sql<{ version: string; applied_at: Date }>`
      SELECT version, applied_at FROM schema_migrations ORDER BY version`.execute(database.db);
    expect(after.rows).toEqual(before.rows);
  });

  it('applies only the migrations added since the last run, in version order', async () => {
    const database = await freshDatabase();
    const { dir, write } = migrationsDir({ '0001_widgets.sql': CREATE_A });
    expect(await migrateDatabase(database, dir)).toEqual(['0001_widgets']);
    write({ '0003_more.sql': 'ALTER TABLE gadgets ADD COLUMN label text;\n', '0002_gadgets.sql': CREATE_B });
    expect(await migrateDatabase(database, dir)).toEqual(['0002_gadgets', '0003_more']);
    expect((await recorded(database)).map((row) => row.version)).toEqual(['0001', '0002', '0003']);
    const gadgets = await sql<{ id: number; label: string | null }>`SELECT id, label FROM gadgets ORDER BY id`.execute(database.db);
    expect(gadgets.rows).toEqual([
      { id: 1, label: null },
      { id: 2, label: null },
    ]);
  });

  it('refuses with MigrationChecksumError when an applied migration was edited, applying nothing else', async () => {
    const database = await freshDatabase();
    const { dir, write } = migrationsDir({ '0001_widgets.sql': CREATE_A });
    await migrateDatabase(database, dir);
    const before = await recorded(database);
    write({
      '0001_widgets.sql': CREATE_A.replace('name text NOT NULL', 'name text'),
      '0002_gadgets.sql': CREATE_B,
    });
    const failure = migrateDatabase(database, dir);
    await expect(failure).rejects.toBeInstanceOf(MigrationChecksumError);
    await expect(failure).rejects.toThrow('migration 0001_widgets was changed after it was applied');
    expect(await recorded(database)).toEqual(before);
    expect(await tableExists(database, 'gadgets')).toBe(false);
  });

  it('rolls back a failing migration: the error propagates, nothing is recorded and its table is not created', async () => {
    const database = await freshDatabase();
    const { dir, write } = migrationsDir({ '0001_widgets.sql': CREATE_A });
    await migrateDatabase(database, dir);
    write({ '0002_broken.sql': 'CREATE TABLE gadgets (id int PRIMARY KEY);\nINSERT INTO no_such_table VALUES (1);\n' });
    await expect(migrateDatabase(database, dir)).rejects.toThrow(/no_such_table/);
    expect((await recorded(database)).map((row) => row.version)).toEqual(['0001']);
    expect(await tableExists(database, 'gadgets')).toBe(false);
    // The database is still usable and the fixed migration applies on the next run.
    write({ '0002_broken.sql': 'CREATE TABLE gadgets (id int PRIMARY KEY);\n' });
    expect(await migrateDatabase(database, dir)).toEqual(['0002_broken']);
    expect(await tableExists(database, 'gadgets')).toBe(true);
  });

  it('rolls back the whole run when a later migration fails, even the ones before it', async () => {
    const database = await freshDatabase();
    const { dir } = migrationsDir({ '0001_widgets.sql': CREATE_A, '0002_broken.sql': 'CREATE TABLE gadgets (id int);\nSELECT 1/0;\n' });
    await expect(migrateDatabase(database, dir)).rejects.toThrow(/division by zero/);
    expect(await recorded(database)).toEqual([]);
    expect(await tableExists(database, 'widgets')).toBe(false);
    expect(await tableExists(database, 'gadgets')).toBe(false);
  });

  it('leaves the data as it was when an upgrade fails, and the error names the migration, the cause and the rollback', async () => {
    const database = await freshDatabase();
    const { dir, write } = migrationsDir({ '0001_widgets.sql': CREATE_A });
    await migrateDatabase(database, dir);
    await sql`INSERT INTO widgets VALUES (1, 'one'), (2, 'two')`.execute(database.db);
    write({
      '0002_rename.sql': 'ALTER TABLE widgets RENAME COLUMN name TO label;\nUPDATE widgets SET label = upper(label);\n',
      '0003_broken.sql': 'DELETE FROM widgets WHERE id = 1;\nALTER TABLE widgets ADD COLUMN size no_such_type;\n',
    });
    const failure = migrateDatabase(database, dir);
    await expect(failure).rejects.toBeInstanceOf(MigrationFailedError);
    await expect(failure).rejects.toThrow(/^migration 0003_broken failed: .*no_such_type.*Nothing of this upgrade was applied/);
    const widgets = await sql<{ id: number; name: string }>`SELECT id, name FROM widgets ORDER BY id`.execute(database.db);
    expect(widgets.rows).toEqual([
      { id: 1, name: 'one' },
      { id: 2, name: 'two' },
    ]);
    expect(await databaseSchemaVersion(database, dir)).toEqual({ applied: '0001', expected: '0003', up_to_date: false });
  });

  it('reports the schema version: null before any migration, the newest applied after', async () => {
    const database = await freshDatabase();
    const { dir } = migrationsDir({ '0001_widgets.sql': CREATE_A });
    expect(await databaseSchemaVersion(database, dir)).toEqual({ applied: null, expected: '0001', up_to_date: false });
    await migrateDatabase(database, dir);
    expect(await databaseSchemaVersion(database, dir)).toEqual({ applied: '0001', expected: '0001', up_to_date: true });
    const later = migrationsDir({ '0001_widgets.sql': CREATE_A, '0002_gadgets.sql': CREATE_B }).dir;
    expect(await databaseSchemaVersion(database, later)).toEqual({ applied: '0001', expected: '0002', up_to_date: false });
  });

  it('applies each migration once when two runs start at the same time', async () => {
    const database = await freshDatabase();
    const { dir } = migrationsDir({ '0001_widgets.sql': CREATE_A, '0002_gadgets.sql': CREATE_B });
    const results = await Promise.all([migrateDatabase(database, dir), migrateDatabase(database, dir)]);
    expect(results.sort((x, y) => y.length - x.length)).toEqual([['0001_widgets', '0002_gadgets'], []]);
    expect((await recorded(database)).map((row) => row.version)).toEqual(['0001', '0002']);
  });
});

describe('readMigrations', () => {
  it('reads the NNNN_name.sql files of a folder in version order with their checksums, ignoring other files', () => {
    const { dir } = migrationsDir({
      '0002_second.sql': 'SELECT 2;\n',
      '0001_first.sql': 'SELECT 1;\n',
      'README.md': '# not a migration',
      '0003-dashed.sql': 'SELECT 3;\n',
      '0004_Upper.sql': 'SELECT 4;\n',
      '12_short.sql': 'SELECT 5;\n',
      '0005_draft.sql.bak': 'SELECT 6;\n',
    });
    const files = readMigrations(dir);
    expect(files.map(({ version, name, sql: text }) => ({ version, name, sql: text }))).toEqual([
      { version: '0001', name: 'first', sql: 'SELECT 1;\n' },
      { version: '0002', name: 'second', sql: 'SELECT 2;\n' },
    ]);
    expect(files[0]!.checksum).toMatch(/^[0-9a-f]{64}$/);
    expect(files[0]!.checksum).not.toBe(files[1]!.checksum);
    expect(readMigrations(dir)).toEqual(files);
  });
});
