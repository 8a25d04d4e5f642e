import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readMigrations } from '../migrations/runner.js';
import { CLICKHOUSE_MIGRATIONS, PROJECT_ROOT } from '../paths.js';
import { DIMENSIONS } from './rollups.js';
import { LINK_DIMS } from './visits.repository.js';

/** The dimension names of each `ARRAY JOIN [('dim', expr), …] AS pair` fan-out in a SQL text, in order. */
function fanOuts(sql: string): string[][] {
  return [...sql.matchAll(/ARRAY JOIN \[([\s\S]*?)\] AS pair/g)].map((match) => [...match[1]!.matchAll(/^\s*\('([a-z_]+)',/gm)].map((pair) => pair[1]!));
}

describe('statistics dimensions', () => {
  it('finds the fan-outs it checks, and a list that drifted', () => {
    const drifted = fanOuts("ARRAY JOIN [\n  ('country', toString(country)),\n  ('os', toString(os))\n] AS pair");
    expect(drifted).toEqual([['country', 'os']]);
    expect(drifted[0]).not.toEqual([...DIMENSIONS]);
    expect(fanOuts("ARRAY JOIN if(link_id = '', [('subdomain', toString(subdomain))], []) AS target")).toEqual([]);
  });

  it('every dimension rollup the ClickHouse migrations build fans out exactly DIMENSIONS, in order', () => {
    const migrations = readMigrations(CLICKHOUSE_MIGRATIONS).filter((migration) => /\bstats_dims\b/.test(migration.sql));
    const checked = migrations.flatMap((migration) => fanOuts(migration.sql).map((dims) => ({ migration: `${migration.version}_${migration.name}`, dims })));
    // 0003 created stats_dims_mv and backfilled stats_dims, 0005 rebuilt and refilled both: four fan-outs.
    expect(checked.map((entry) => entry.migration)).toEqual(['0003_stats_rollups', '0003_stats_rollups', '0005_stats_dims_refill', '0005_stats_dims_refill']);
    for (const entry of checked) expect(entry, entry.migration).toEqual({ migration: entry.migration, dims: [...DIMENSIONS] });
  });

  it("a link's breakdowns, read from its rows of visits and folded before retention deletes them, fan out every dimension but link", () => {
    expect(fanOuts(`ARRAY JOIN [${LINK_DIMS}] AS pair`)).toEqual([DIMENSIONS.filter((dim) => dim !== 'link')]);
    // Both readers of a link's rows (the report, and the fold into stats_link_dims) use that one list and no other fan-out.
    for (const file of ['stats.repository.ts', 'visits.repository.ts']) {
      const source = readFileSync(join(PROJECT_ROOT, 'shared', 'analytics', file), 'utf8');
      expect(source, file).toContain('ARRAY JOIN [${LINK_DIMS}] AS pair');
      // Its one fan-out is that constant's: no list written out in the file itself.
      expect(fanOuts(source), file).toEqual([[]]);
    }
  });
});
