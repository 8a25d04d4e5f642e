// End-to-end delay: from the redirect to the visit's row being queryable in ClickHouse.
//   bash bench/run.sh e2e-delay [requests-per-second] [seconds]
// One process runs the ingest edge and the enricher (production batching: 10 000 rows or 500 ms),
// on the in-process log and chDB, or on Kafka / a ClickHouse server when KAFKA_BROKERS /
// CLICKHOUSE_URL are set. autocannon sends redirects over HTTP at a steady rate. Each row carries
// its redirect time (`ts`, taken at the edge) and its insert time (`inserted_at`, ClickHouse's clock
// on this machine): their difference is the delay of that visit, read for every visit. Target: p95 ≤ 2 s.
import type { AddressInfo } from 'node:net';
import { buildApp } from '#services/app.js';
import { startVisitConsumer } from '#services/enricher/visit-consumer.js';
import { claimSubdomain, createOwner } from '#tests/support/owners.js';
import { waitFor } from '#tests/support/wait.js';
import { runBench } from './lib/context.js';
import { cannon, otherLoad } from './lib/load.js';

const rate = Number(process.argv[2] ?? 2_000);
const seconds = Number(process.argv[3] ?? 20);
const TARGET_P95_MS = 2_000;
if (!Number.isInteger(rate) || rate < 1 || !Number.isInteger(seconds) || seconds < 1) {
  console.error('usage: bash bench/run.sh e2e-delay [requests-per-second] [seconds]');
  process.exit(1);
}

await runBench({ RATE_LIMIT_REDIRECT: '1000000000:60', ENRICHER_BATCH_WAIT_MS: '500' }, async (context) => {
  const { app } = await buildApp(context);
  const enricher = await startVisitConsumer(context);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as AddressInfo).port;
  const owner = await createOwner(context, app);
  const subdomain = await claimSubdomain(app, owner);
  const created = await app.inject({
    method: 'POST',
    url: '/api/v1/links',
    headers: owner.auth,
    payload: { subdomain, target_url: 'https://example.com/landing', slug: 'delay' },
  });
  if (created.statusCode !== 201) throw new Error(`link creation failed: ${created.body}`);
  const linkId = created.json().data.id as string;
  console.log(`mode: message log ${context.messageLog.kind}, analytics ${context.analytics.kind}; ${await otherLoad()}`);

  const run = await cannon(`http://127.0.0.1:${port}/delay`, {
    durationSec: seconds,
    connections: 16,
    rate,
    expectStatus: 302,
    headers: { host: `${subdomain}.localhost`, 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/130.0 Safari/537.36' },
  });
  const query = async <T>(sql: string) =>
    (await (await context.analytics.client.query({ query: sql, query_params: { linkId }, format: 'JSONEachRow' })).json<T>())[0]!;
  const stored = async () => Number((await query<{ n: string }>('SELECT count() AS n FROM visits WHERE link_id = {linkId:String}')).n);
  await waitFor(async () => (await stored()) >= run.total, 120_000, { intervalMs: 200, message: `all ${run.total} rows` });
  const delays = await query<{ p50: number; p95: number; p99: number; max: number; n: string; distinct: string }>(
    `SELECT quantileExact(0.5)(d) AS p50, quantileExact(0.95)(d) AS p95, quantileExact(0.99)(d) AS p99, max(d) AS max, count() AS n, uniqExact(id) AS distinct
     FROM (SELECT dateDiff('millisecond', ts, inserted_at) AS d, visit_id AS id FROM visits WHERE link_id = {linkId:String})`,
  );
  await enricher.stop();
  await app.close();
  // The load stops with requests in flight (one per connection at most): the edge may answer and
  // log them after autocannon stopped counting, so a few more rows than counted redirects is right.
  console.log(
    `${run.total} redirects in ${seconds} s (${run.rps.toFixed(0)}/s, redirect p99 ${run.p99} ms); ${delays.n} rows of ${delays.distinct} distinct visits`,
  );
  console.log(`redirect → queryable row: p50 ${delays.p50} ms, p95 ${delays.p95} ms, p99 ${delays.p99} ms, max ${delays.max} ms`);
  console.log(`end-to-end delay p95 ${delays.p95} ms (target ≤ ${TARGET_P95_MS} ms): ${delays.p95 <= TARGET_P95_MS ? 'within target' : 'ABOVE target'}`);
});
