import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '#shared/paths.js';
import { isRepository, isTest, matchingLines, offendingLines, projectSources, type LinePattern } from '#tests/support/sources.js';

/**
 * SQL lives only in repositories (`*.repository.ts`): a Postgres query (kysely's builder or its `sql`
 * template) or a ClickHouse query anywhere else in the code the roles run fails this test, which
 * names the file, the line and what it found. Tests, test support (tests/support/, not scanned) and the
 * migration files (`postgres/migrations/*.sql`, `clickhouse/migrations/*.sql`) keep their SQL.
 */

/** What a query looks like in our code, Postgres and ClickHouse. */
const QUERY_PATTERNS: readonly LinePattern[] = [
  { what: 'kysely query builder', pattern: /\.(?:selectFrom|insertInto|updateTable|deleteFrom|replaceInto|mergeInto)\(/ },
  { what: 'kysely sql template', pattern: /(?<![.\w])sql(?:<[^`>]*>)?`/ },
  { what: 'raw query', pattern: /\bsql\.raw\(|\.executeQuery\(/ },
  { what: 'ClickHouse client call', pattern: /\bclient\.(?:query|command|exec|insert)\(/ },
  { what: 'ClickHouse query helper', pattern: /\b(?:selectRows|insertEncoded)\(/ },
  { what: 'SQL text', pattern: /[`'"]\s*(?:SELECT|INSERT INTO|ALTER TABLE|DELETE FROM|OPTIMIZE TABLE|CREATE TABLE|DROP TABLE|TRUNCATE)\b/ },
  { what: 'query with SQL text', pattern: /\b(?:query|command)\s*:\s*[`'"][^`'"]*\b(?:SELECT|INSERT|ALTER|DELETE|OPTIMIZE|CREATE|DROP)\b/ },
];

/** The queries a source text holds: each line that matches a pattern, with what it matched. */
const queriesIn = (source: string) => matchingLines(source, QUERY_PATTERNS);

/** Folders of the code the roles (and their scripts) run. */
const SCANNED = ['services', 'shared', 'scripts'];

/**
 * Files that are not repositories and may still speak SQL, each with its reason. Nothing else:
 * a new entry here needs as good a reason.
 */
const ALLOWED: Record<string, string> = {
  'shared/db/database.ts': 'the Postgres client: checks its connection (SELECT 1) and takes the migration lock',
  'shared/migrations/postgres.ts': "the Postgres side of the migration runner: its bookkeeping table is the runner's own",
  'shared/analytics/analytics.ts': 'the ClickHouse client: selectRows and insertEncoded are the transport repositories call',
  'shared/migrations/clickhouse.ts': "the ClickHouse side of the migration runner: its bookkeeping table is the runner's own",
};

/** Whether a file is outside the rule: tests, repositories and the allowed files (the migration runner's by name, not by folder). */
function exempt(path: string): boolean {
  return isTest(path) || isRepository(path) || path in ALLOWED;
}

describe('SQL lives only in repositories', () => {
  it('finds every kind of query it looks for', () => {
    const planted = [
      "const row = await db.selectFrom('users').select('email').executeTakeFirst();",
      "await db.insertInto('visitor_salts').values(row).execute();",
      "await db.updateTable('links').set({ title }).execute();",
      "await db.deleteFrom('sessions').where('id', '=', id).execute();",
      'await sql`SELECT 1`.execute(db);',
      'const day = sql<string>`${oldest}::date`;',
      "const result = await client.query({ format: 'JSONEachRow', query_params });",
      'await context.analytics.client.command({ query: statement });',
      'const rows = await selectRows(client, text, {});',
      'await analytics.insertEncoded(batch);',
      'const QUERY = `SELECT visit_id FROM visits WHERE ts > {from:DateTime64(3)}`;',
      "run({ query: 'OPTIMIZE TABLE visits FINAL' });",
      "run({ query: 'SYSTEM FLUSH LOGS; SELECT 1' });",
    ];
    for (const line of planted) expect(queriesIn(line), line).toHaveLength(1);
  });

  it('leaves alone what only looks like a query', () => {
    const harmless = [
      'query: z.object({ ...pagingQuery, cursor: cursorParam(TIME_CURSOR) }),',
      "const { query: signals } = validateRequest([{ part: 'query', schema: SignalsSchema, input: data }], locale);",
      '// A past time expires the link now (its short URL answers 410; DELETE removes it instead).',
      "await audits.insert({ action: 'export', actorId: principal.userId });",
      'const counts = await visitRows.visitCounts(linkIds);',
      '/** One forward-only migration file: `NNNN_name.sql`. */',
    ];
    for (const line of harmless) expect(queriesIn(line), line).toEqual([]);
  });

  it('no service, shared module or script outside a repository holds a query', () => {
    expect(offendingLines(projectSources(SCANNED), QUERY_PATTERNS, exempt)).toEqual([]);
  });

  it('every allowed exception still holds SQL (an entry without a reason left is removed)', () => {
    for (const path of Object.keys(ALLOWED)) expect(queriesIn(readFileSync(join(PROJECT_ROOT, path), 'utf8')), path).not.toEqual([]);
  });
});
