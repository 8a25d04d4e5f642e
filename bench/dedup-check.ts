// What the enricher's check of a redelivered batch costs (issue 24: exactly once into the rollups):
// the one query that finds which of a batch's visits `visits` already holds (storedVisits), per row,
// beside what inserting the same batch costs. Batches handed over for the first time never pay it.
//   bash bench/run.sh dedup-check [visits] [batch] [runs]
// defaults 2 000 000 stored visits, batches of 10 000 (ENRICHER_BATCH_SIZE), 20 runs per case.
//
// The visits are generated inside ClickHouse: `visits` spread over 30 days (bench/lib/seed-visits.ts,
// 240 subdomains), then 1 000 000 more over the last hour in 20 inserts in time order, as the
// enricher writes them (300 subdomains, 20 000 links). A redelivered batch is the newest `batch`
// stored visits, as a log hands them over again; "none stored" is a batch of as many new visits of
// the same subdomains, links and times (the bloom filter index on visit_id skips their granules).
// The last line times the variant bounded by the sort key's prefix too (the batch's subdomains and
// links), which storedVisits does not use. Embedded chDB on this machine; CLICKHOUSE_URL for a server.
import { performance } from 'node:perf_hooks';
import { v7 as uuidv7 } from 'uuid';
import { enrich } from '#shared/visits/enrichment.js';
import { STORED_VISITS_QUERY } from '#shared/analytics/visits.repository.js';
import { encodeVisits, storedVisits } from '#shared/visits/visit-rows.js';
import { selectRows, toClickHouseTime } from '#shared/analytics/analytics.js';
import type { RawVisit } from '#shared/visits/raw-visit.js';
import { runBench } from './lib/context.js';
import { otherLoad, quantile } from './lib/load.js';
import { seedVisits } from './lib/seed-visits.js';
import { createRepositories } from '#services/repositories.js';

const total = Number(process.argv[2] ?? 2_000_000);
const batch = Number(process.argv[3] ?? 10_000);
const runs = Number(process.argv[4] ?? 20);
if (![total, batch, runs].every(Number.isInteger) || total < 100_000 || batch < 10 || batch > total / 10 || runs < 3) {
  console.error('usage: bash bench/run.sh dedup-check [visits ≥ 100000] [batch ≥ 10, at most a tenth of the visits] [runs ≥ 3]');
  process.exit(1);
}

await runBench({ LOG_LEVEL: 'silent' }, async (context) => {
  const repositories = createRepositories(context);
  const links = Array.from({ length: 200 }, (_, i) => `l_bench${i}`);
  const seeding = performance.now();
  await seedVisits(context, {
    total,
    mine: Math.floor(total * 0.6),
    days: 30,
    ownerId: 'bench-owner',
    subdomain: 'bench',
    hot: links[0]!,
    hotRows: Math.floor(total * 0.01),
    links,
  });
  const RECENT = 1_000_000;
  for (let chunk = 0; chunk < 20; chunk++) {
    await context.analytics.client.command({
      query: `INSERT INTO visits (visit_id, ts, kind, owner_id, subdomain, link_id, slug, ip_public, user_agent, visitor_hash)
        SELECT generateUUIDv7(number), now64(3) - toIntervalMillisecond((${RECENT} - (${chunk * (RECENT / 20)} + number)) * 3.6), 'visit',
          concat('recent-owner-', toString(cityHash64(number) % 300)), concat('recent', toString(cityHash64(number) % 300)),
          concat('l_recent', toString(cityHash64(number) % 20000)), 's', '203.0.113.7', 'Mozilla/5.0', hex(cityHash64(number % 300000))
        FROM numbers(${RECENT / 20})`,
    });
  }
  console.log(
    `seeded ${total} visits over 30 days and ${RECENT} over the last hour in ${((performance.now() - seeding) / 1000).toFixed(0)} s (rollup views included); ${await otherLoad()}`,
  );

  const newest = await selectRows<{ visit_id: string; ts: string; subdomain: string; link_id: string; owner_id: string }>(
    context.analytics.client,
    'SELECT visit_id, ts, subdomain, link_id, owner_id FROM visits ORDER BY ts DESC LIMIT {batch:UInt32}',
    { batch },
  );
  const asVisit = (row: (typeof newest)[number], visitId = row.visit_id): RawVisit => ({
    visit_id: visitId,
    ts: `${row.ts.replace(' ', 'T')}Z`,
    kind: 'visit',
    owner_id: row.owner_id,
    subdomain: row.subdomain,
    link_id: row.link_id,
    slug: 's',
    ip_public: '203.0.113.7',
    user_agent: 'Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0',
    referrer: '',
    accept_language: 'en',
    query: '',
    expects_beacon: false,
  });
  const stored = newest.map((row) => asVisit(row));
  const fresh = newest.map((row) => asVisit(row, uuidv7({ msecs: Date.parse(`${row.ts.replace(' ', 'T')}Z`) })));
  const half = stored.map((visit, i) => (i % 2 === 0 ? visit : fresh[i]!));
  const span = (Date.parse(stored[0]!.ts) - Date.parse(stored.at(-1)!.ts)) / 60_000;
  console.log(
    `a batch: ${batch} visits over ${span.toFixed(1)} min, ${new Set(stored.map((visit) => visit.subdomain)).size} subdomains, ${new Set(stored.map((visit) => visit.link_id)).size} links`,
  );

  /** Milliseconds of each run of `work` (the first, cold, apart). */
  const timed = async (work: () => Promise<unknown>) => {
    const cold = performance.now();
    await work();
    const first = performance.now() - cold;
    const times: number[] = [];
    for (let run = 0; run < runs; run++) {
      const started = performance.now();
      await work();
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    return { first, p50: quantile(times, 0.5), p95: quantile(times, 0.95) };
  };
  const report = (name: string, { first, p50, p95 }: { first: number; p50: number; p95: number }) =>
    console.log(
      `${name.padEnd(34)} p50 ${p50.toFixed(1).padStart(7)} ms  p95 ${p95.toFixed(1).padStart(7)} ms  first ${first.toFixed(1).padStart(7)} ms  → ${((p50 * 1000) / batch).toFixed(2)} µs/row (p50)`,
    );

  for (const [name, visits, expected] of [
    ['check, all stored (a redelivery)', stored, batch],
    ['check, half stored', half, batch / 2],
    ['check, none stored', fresh, 0],
  ] as const) {
    const found = (await storedVisits(repositories, visits)).size;
    if (found !== Math.floor(expected)) throw new Error(`${name}: found ${found} stored, expected ${Math.floor(expected)}`);
    report(name, await timed(() => storedVisits(repositories, visits)));
  }

  // The variant bounded by the sort key's prefix too, for comparison (not used).
  const keyBounded = STORED_VISITS_QUERY.replace('WHERE ', 'WHERE subdomain IN {subdomains:Array(String)} AND link_id IN {links:Array(String)} AND ');
  const times = stored.map((visit) => Date.parse(visit.ts));
  const params = {
    subdomains: [...new Set(stored.map((visit) => visit.subdomain))],
    links: [...new Set(stored.map((visit) => visit.link_id))],
    from: toClickHouseTime(Math.min(...times)),
    to: toClickHouseTime(Math.max(...times)),
    ids: stored.map((visit) => visit.visit_id),
  };
  if ((await selectRows(context.analytics.client, keyBounded, params)).length !== batch) throw new Error('the key-bounded variant missed stored visits');
  report('(variant: + subdomain, link_id IN)', await timed(() => selectRows(context.analytics.client, keyBounded, params)));

  // For scale: inserting a batch of as many new visits (encoded beforehand), rollup views included.
  const plain = (visit: RawVisit) => ({ ...enrich(visit, { lookup: () => undefined }), visitor_hash: 'h', is_unique: 0 as const });
  let round = 0;
  const inserts = await Promise.all(
    Array.from({ length: runs + 1 }, () => {
      round++;
      return encodeVisits(
        fresh.map((visit) => ({ ...visit, visit_id: uuidv7({ msecs: Date.parse(visit.ts) }), subdomain: `${visit.subdomain}-i${round}` })),
        plain,
      );
    }),
  );
  let next = 0;
  report('insert of a batch (for scale)', await timed(() => context.analytics.insertEncoded(inserts[next++]!)));
  console.log(`cost of a batch handed over for the first time: 0 (redelivered=false sends no query)`);
});
