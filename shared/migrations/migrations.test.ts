import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { splitStatements } from './clickhouse.js';
import { MigrationChecksumError, pendingMigrations, type MigrationFile } from './runner.js';
import { CLICKHOUSE_MIGRATIONS } from '../paths.js';

describe('splitStatements', () => {
  it('splits a script at each semicolon that ends a line and trims the statements', () => {
    expect(splitStatements('CREATE TABLE a (x UInt8) ENGINE = Memory;\n  CREATE TABLE b (y UInt8) ENGINE = Memory;  \n')).toEqual([
      'CREATE TABLE a (x UInt8) ENGINE = Memory',
      'CREATE TABLE b (y UInt8) ENGINE = Memory',
    ]);
  });

  it('keeps a statement spread over several lines whole', () => {
    expect(splitStatements('CREATE TABLE a (\n  x UInt8,\n  y String\n)\nENGINE = Memory;\n')).toEqual([
      'CREATE TABLE a (\n  x UInt8,\n  y String\n)\nENGINE = Memory',
    ]);
  });

  it('keeps the last statement when it has no closing semicolon', () => {
    expect(splitStatements('SELECT 1;\nSELECT 2')).toEqual(['SELECT 1', 'SELECT 2']);
  });

  it('does not split at a semicolon inside a line', () => {
    expect(splitStatements("SELECT 'a;b', 1;\nSELECT 2;")).toEqual(["SELECT 'a;b', 1", 'SELECT 2']);
  });

  it('ends a statement at a semicolon followed by a comment on the same line', () => {
    expect(splitStatements('SELECT 1; -- first\nSELECT 2;')).toEqual(['SELECT 1', 'SELECT 2']);
  });

  it('drops whole-line comments, including indented ones, and statements left empty', () => {
    const script = '-- header comment\n  -- indented comment\nSELECT 1;\n-- only a comment here;\n;\n\nSELECT 2;\n-- footer\n';
    expect(splitStatements(script)).toEqual(['SELECT 1', 'SELECT 2']);
  });

  it('handles CRLF line ends', () => {
    expect(splitStatements('SELECT 1;\r\nSELECT 2;\r\n')).toEqual(['SELECT 1', 'SELECT 2']);
  });

  it('returns nothing for an empty or comment-only script', () => {
    expect(splitStatements('')).toEqual([]);
    expect(splitStatements('\n\n  \n')).toEqual([]);
    expect(splitStatements('-- nothing to do\n-- at all\n')).toEqual([]);
  });

  it('turns the visits migration into its one CREATE TABLE statement, without the leading comments', () => {
    const statements = splitStatements(readFileSync(join(CLICKHOUSE_MIGRATIONS, '0001_visits.sql'), 'utf8'));
    expect(statements).toHaveLength(1);
    expect(statements[0]).toMatch(/^CREATE TABLE IF NOT EXISTS visits \(/);
    expect(statements[0]).toMatch(/non_replicated_deduplication_window = 1000$/);
    expect(statements[0]).not.toMatch(/^\s*--/m);
  });
});

const file = (version: string, name: string, checksum = `sum-${version}`): MigrationFile => ({
  version,
  name,
  sql: `-- ${name}`,
  checksum,
});

describe('pendingMigrations', () => {
  const files = [file('0001', 'users'), file('0002', 'links'), file('0003', 'visits')];

  it('returns every file when nothing is applied', () => {
    expect(pendingMigrations(files, [])).toEqual(files);
  });

  it('returns the files not yet applied, in file order', () => {
    expect(pendingMigrations(files, [{ version: '0001', checksum: 'sum-0001' }])).toEqual([files[1], files[2]]);
    expect(pendingMigrations(files, [{ version: '0002', checksum: 'sum-0002' }])).toEqual([files[0], files[2]]);
  });

  it('returns nothing when every file is applied unchanged', () => {
    const applied = files.map(({ version, checksum }) => ({ version, checksum }));
    expect(pendingMigrations(files, applied)).toEqual([]);
  });

  it('ignores applied versions that have no file', () => {
    expect(
      pendingMigrations(
        [files[0]!],
        [
          { version: '0001', checksum: 'sum-0001' },
          { version: '0009', checksum: 'x' },
        ],
      ),
    ).toEqual([]);
  });

  it('refuses with MigrationChecksumError naming the migration when an applied file changed', () => {
    const applied = [
      { version: '0001', checksum: 'sum-0001' },
      { version: '0002', checksum: 'the checksum it had when applied' },
    ];
    expect(() => pendingMigrations(files, applied)).toThrow(MigrationChecksumError);
    expect(() => pendingMigrations(files, applied)).toThrow('migration 0002_links was changed after it was applied; add a new migration instead');
    try {
      pendingMigrations(files, applied);
    } catch (error) {
      expect((error as Error).name).toBe('MigrationChecksumError');
    }
  });

  it('refuses even when the changed migration is older than pending ones, so nothing new is applied', () => {
    expect(() => pendingMigrations(files, [{ version: '0001', checksum: 'edited' }])).toThrow(MigrationChecksumError);
  });
});
