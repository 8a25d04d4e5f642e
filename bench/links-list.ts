// Latency of GET /api/v1/links for an owner with 100 000 links: p50/p95/p99 per query shape, through
// the whole app (auth, rate limit, validation, SQL, envelope) with app.inject, requests one at a time.
//   bash bench/run.sh links-list [links] [requests-per-shape] [visits]
// Embedded PGlite unless DATABASE_URL is set (then that Postgres server). Besides the owner's links,
// another owner holds a fifth as many, so the indexes must separate owners as they do in production.
// The links are bulk-inserted with SQL (generate_series), not through the API: the benchmark measures
// reads. The plan of the first page is printed (EXPLAIN) to show which index answers it.
// `include=clicks` shapes read each listed link's click counts from the rollups: `visits` visits of
// the last 30 days are generated in ClickHouse first (bench/lib/seed-visits.ts), most of them on the
// 200 newest links, so that the first pages have counts to sum.
import { sql } from 'kysely';
import type { Context } from '#shared/context.js';
import { buildApp } from '#services/app.js';
import { runBench } from './lib/context.js';
import { seedVisits } from './lib/seed-visits.js';
import { quantile } from './lib/load.js';
import { claimSubdomain, createOwner, type TestOwner } from '#tests/support/owners.js';

const total = Number(process.argv[2] ?? 100_000);
const perShape = Number(process.argv[3] ?? 200);
const visits = Number(process.argv[4] ?? 1_000_000);
if (!Number.isInteger(total) || total < 1000 || !Number.isInteger(perShape) || perShape < 10 || !Number.isInteger(visits) || visits < 1000) {
  console.error('usage: bash bench/run.sh links-list [links ≥ 1000] [requests-per-shape ≥ 10] [visits ≥ 1000]');
  process.exit(1);
}

/** Inserts `count` links for the owner, spread over the subdomains, every tenth tagged `promo`. */
async function seed(context: Context, owner: TestOwner, subdomains: string[], count: number) {
  const batch = 20_000;
  for (let start = 0; start < count; start += batch) {
    const end = Math.min(count, start + batch);
    await sql`
      INSERT INTO links (id, owner_id, subdomain, slug, target_url, title, tags, created_at)
      SELECT 'l_' || substr(md5(${owner.id} || i::text), 1, 16),
             ${owner.id}::uuid,
             (${subdomains}::text[])[1 + i % ${subdomains.length}],
             'b' || i::text,
             'https://example.com/products/' || i::text || '?utm_source=bench',
             'Product ' || i::text || CASE WHEN i % 97 = 0 THEN ' spring sale' ELSE '' END,
             CASE WHEN i % 10 = 0 THEN ARRAY['promo'] ELSE ARRAY['catalog'] END,
             now() - make_interval(secs => ${count} - i)
      FROM generate_series(${start + 1}::int, ${end}::int) AS i`.execute(context.db.db);
  }
  await sql`ANALYZE links`.execute(context.db.db);
}

await runBench({ RATE_LIMIT_API: '1000000000:60' }, async (context) => {
  const { app } = await buildApp(context);
  const owner = await createOwner(context, app);
  const other = await createOwner(context, app);
  const subdomains = [await claimSubdomain(app, owner), await claimSubdomain(app, owner), await claimSubdomain(app, owner), await claimSubdomain(app, owner)];
  const otherSubdomain = await claimSubdomain(app, other);

  const seeding = performance.now();
  await seed(context, owner, subdomains, total);
  await seed(context, other, [otherSubdomain], Math.floor(total / 5));
  console.log(
    `database: ${context.db.kind}; ${total} links for the owner over ${subdomains.length} subdomains, ${Math.floor(total / 5)} for another owner ` +
      `(seeded in ${((performance.now() - seeding) / 1000).toFixed(1)} s); ${perShape} requests per shape, one at a time, through app.inject`,
  );

  const fetchJson = async (url: string) => {
    const response = await app.inject({ method: 'GET', url, headers: owner.auth });
    if (response.statusCode !== 200) throw new Error(`${url} answered ${response.statusCode}: ${response.body.slice(0, 300)}`);
    return response.json<{ data: { links: unknown[] }; meta: { next_cursor: string | null; total: number } }>();
  };

  const newest = (await fetchJson('/api/v1/links?limit=200')).data.links.map((link) => (link as { id: string }).id);
  const seedingVisits = performance.now();
  await seedVisits(context, {
    total: visits,
    mine: Math.floor(visits * 0.9),
    days: 30,
    ownerId: owner.id,
    subdomain: subdomains[0]!,
    hot: newest[0]!,
    hotRows: Math.floor(visits / 10),
    links: newest,
  });
  console.log(
    `${visits} visits of the last 30 days generated in ClickHouse, 90 % on the owner's 200 newest links (${((performance.now() - seedingVisits) / 1000).toFixed(1)} s)`,
  );

  // A cursor deep in the list: the one after walking 20 000 links (page size 200).
  let deepCursor: string | null = null;
  for (let i = 0; i < 100; i++) deepCursor = (await fetchJson(`/api/v1/links?limit=200${deepCursor ? `&cursor=${deepCursor}` : ''}`)).meta.next_cursor;

  const shapes: [string, string][] = [
    ['first page (limit 50)', '/api/v1/links'],
    ['first page (limit 200)', '/api/v1/links?limit=200'],
    ['first page, include=clicks', '/api/v1/links?include=clicks'],
    ['limit 200, include=clicks', '/api/v1/links?limit=200&include=clicks'],
    ['cursor 20 000 links deep', `/api/v1/links?cursor=${deepCursor}`],
    ['one subdomain', `/api/v1/links?subdomain=${subdomains[1]}`],
    ['tag=promo (10 %)', '/api/v1/links?tag=promo'],
    ['q=spring sale (1 %)', '/api/v1/links?q=spring%20sale'],
    ['q=products/4242 (rare)', '/api/v1/links?q=products/4242'],
    ['since (last 1 000)', `/api/v1/links?since=${encodeURIComponent(new Date(Date.now() - 1_000_000).toISOString())}`],
    ['?page=100 (offset 4 950)', '/api/v1/links?page=100'],
  ];
  console.log(`\n${'shape'.padEnd(30)}${'p50 ms'.padStart(9)}${'p95 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'total'.padStart(9)}`);
  for (const [name, url] of shapes) {
    const first = await fetchJson(url); // warm-up, and the total it reports
    const times: number[] = [];
    for (let i = 0; i < perShape; i++) {
      const started = performance.now();
      await fetchJson(url);
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    console.log(
      `${name.padEnd(30)}${quantile(times, 0.5).toFixed(1).padStart(9)}${quantile(times, 0.95).toFixed(1).padStart(9)}${quantile(times, 0.99).toFixed(1).padStart(9)}${String(first.meta.total).padStart(9)}`,
    );
  }

  const plan = await sql<{
    'QUERY PLAN': string;
  }>`EXPLAIN SELECT * FROM links WHERE deleted_at IS NULL AND owner_id = ${owner.id}::uuid ORDER BY seq DESC LIMIT 51`.execute(context.db.db);
  console.log(`\nplan of the first page:\n${plan.rows.map((row) => `  ${row['QUERY PLAN']}`).join('\n')}`);
  // An unfiltered total is the sum of the subdomains' live_links counters (kept by triggers), not a count.
  const count = await sql<{ 'QUERY PLAN': string }>`EXPLAIN SELECT coalesce(sum(live_links), 0) FROM subdomains WHERE owner_id = ${owner.id}::uuid`.execute(
    context.db.db,
  );
  console.log(`plan of its total (live_links counters):\n${count.rows.map((row) => `  ${row['QUERY PLAN']}`).join('\n')}`);
  // The seeded rows go with their owners (ON DELETE CASCADE), so a shared Postgres is left as it was.
  await sql`DELETE FROM users WHERE id IN (${owner.id}::uuid, ${other.id}::uuid)`.execute(context.db.db);
  await app.close();
});
