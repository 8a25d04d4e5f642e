// Pipeline throughput: visits/s from the message log through one enricher (enrichment, uniques,
// events, limits) into ClickHouse, and the delay from publish to queryable row.
//   bash bench/run.sh pipeline [visits]
// In-process log and chDB unless KAFKA_BROKERS / CLICKHOUSE_URL are set (then Kafka / the server).
// The visits are published first (the backlog), then one enricher drains it: visits/s is the
// backlog over the time from the enricher's start to the last row being counted. Target: ≥ 50 000
// visits/s per enricher process. Then a trickle of single visits measures the end-to-end delay, and
// the same number of visits, encoded beforehand, is inserted on its own: ClickHouse's share of the cost.
// The in-process log holds at most 100 000 unconsumed visits: a larger backlog needs Kafka.
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { v7 as uuidv7 } from 'uuid';
import { startVisitConsumer } from '#services/enricher/visit-consumer.js';
import { enrich } from '#shared/visits/enrichment.js';
import { encodeVisits } from '#shared/visits/visit-rows.js';
import { visitorHash } from '#shared/visits/visitor-hash.js';
import { openGeoLookup } from '#shared/geo.js';
import { uniqueName } from '#tests/support/context.js';
import { waitFor } from '#tests/support/wait.js';
import { runBench } from './lib/context.js';
import { TOPICS } from '#shared/message-log/topics.js';
import type { RawVisit } from '#shared/visits/raw-visit.js';

const total = Number(process.argv[2] ?? 100_000);
const TARGET = 50_000;
if (!Number.isInteger(total) || total < 1000) {
  console.error('usage: bash bench/run.sh pipeline [visits ≥ 1000]');
  process.exit(1);
}

const AGENTS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0',
  'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
];

// Production batching: up to ENRICHER_BATCH_SIZE (10 000) visits or 500 ms (tests wait less).
await runBench({ ENRICHER_BATCH_WAIT_MS: '500' }, async (context) => {
  const subdomain = uniqueName('bench').toLowerCase().slice(0, 40);
  const count = async () => {
    const result = await context.analytics.client.query({
      query: 'SELECT count() AS n FROM visits WHERE subdomain = {subdomain:String}',
      query_params: { subdomain },
      format: 'JSONEachRow',
    });
    return Number((await result.json<{ n: number }>())[0]!.n);
  };
  const visit = (i: number, ts = new Date()): RawVisit => ({
    visit_id: uuidv7(),
    ts: ts.toISOString(),
    kind: 'visit',
    owner_id: 'bench-owner',
    expects_beacon: false,
    subdomain,
    link_id: `l_bench${i % 50}`,
    slug: `s${i % 50}`,
    ip_public: `81.2.${(i >> 8) % 256}.${i % 256}`,
    user_agent: AGENTS[i % AGENTS.length]!,
    referrer: i % 3 === 0 ? 'https://news.example/item' : '',
    accept_language: 'en-GB,en;q=0.9',
    query: i % 2 === 0 ? 'utm_source=newsletter&utm_medium=email' : '',
  });

  if (context.config.messageLog.kind === 'lmdb' && total > context.config.messageLog.capacity) {
    throw new Error(
      `the one-process message log holds at most ${context.config.messageLog.capacity} unconsumed visits (VISIT_LOG_CAPACITY): a backlog of ${total} needs more`,
    );
  }
  const publishing = performance.now();
  for (let start = 0; start < total; start += 5_000) {
    const messages = [];
    for (let i = start; i < Math.min(total, start + 5_000); i++) {
      const value = visit(i);
      messages.push({ key: value.link_id, value: JSON.stringify(value) });
    }
    await context.messageLog.publish(TOPICS.visitsRaw, messages);
  }
  console.log(
    `mode: message log ${context.messageLog.kind}, analytics ${context.analytics.kind}; ${total} visits published in ${((performance.now() - publishing) / 1000).toFixed(1)} s`,
  );

  // The events the enricher raises leave the process: on Kafka to the broker; in process, a
  // consumer commits them untouched (the webhook worker's place), or the log would keep them all.
  const eventsTaken =
    context.messageLog.kind === 'lmdb'
      ? await context.messageLog.consume({ groupId: 'bench-webhooks', topic: TOPICS.events, maxBatch: 5_000, handler: async () => undefined })
      : undefined;
  const started = performance.now();
  const elu = performance.eventLoopUtilization();
  const cpuBefore = process.cpuUsage();
  const enricher = await startVisitConsumer(context);
  await waitFor(async () => (await count()) >= total, 600_000, { intervalMs: 200, message: `all ${total} rows` });
  const seconds = (performance.now() - started) / 1000;
  const busy = performance.eventLoopUtilization(elu).utilization;
  const cpu = process.cpuUsage(cpuBefore);
  const rate = total / seconds;
  const batches = (await context.metrics.insertBatchSize.get()).values.find((value) => value.metricName === 'visits_insert_batch_size_count')?.value ?? 0;
  console.log(
    `drained ${total} visits in ${seconds.toFixed(2)} s: ${rate.toFixed(0)} visits/s (${batches} inserts, ${(total / Math.max(1, batches)).toFixed(0)} rows each; main thread busy ${(busy * 100).toFixed(0)} %)`,
  );
  // All of this process's threads (JavaScript, chDB's, zlib's, the GC's): what a visit costs in CPU.
  const cpuUs = (cpu.user + cpu.system) / total;
  console.log(
    `process CPU per visit: ${cpuUs.toFixed(1)} µs, of which the main thread about ${((busy * seconds * 1e6) / total).toFixed(1)} µs (${cpus().length} cores: at most ${((cpus().length * 1e6) / cpuUs).toFixed(0)} visits/s at this cost)`,
  );

  // End-to-end delay of single visits arriving one by one (batches fill for at most 500 ms).
  const delays: number[] = [];
  for (let i = 0; i < 20; i++) {
    const before = await count();
    const sent = performance.now();
    const value = visit(total + i);
    await context.messageLog.publish(TOPICS.visitsRaw, [{ key: value.link_id, value: JSON.stringify(value) }]);
    await waitFor(async () => (await count()) !== before, 60_000, { intervalMs: 10, message: "the single visit's row" });
    delays.push(performance.now() - sent);
  }
  delays.sort((a, b) => a - b);
  console.log(
    `publish → queryable row: p50 ${delays[10]!.toFixed(0)} ms, p95 ${delays[18]!.toFixed(0)} ms, max ${delays[19]!.toFixed(0)} ms (20 single visits)`,
  );
  // A steady stream, as the edges publish it (small publishes over the 50 links, hence over every
  // partition): how many visits an insert gathers when the enricher keeps up, and what a visit costs then.
  const streamRate = 3_000;
  const streamSeconds = 10;
  const insertsBefore = (await context.metrics.insertBatchSize.get()).values.find((value) => value.metricName === 'visits_insert_batch_size_count')?.value ?? 0;
  const streamBase = await count();
  const streamCpu = process.cpuUsage();
  const streamStart = performance.now();
  let streamed = 0;
  while (streamed < streamRate * streamSeconds) {
    const due = Math.min(streamRate * streamSeconds, Math.floor(((performance.now() - streamStart) / 1000) * streamRate));
    if (due > streamed) {
      const messages = [];
      for (let i = streamed; i < due; i++) {
        const value = visit(total + 20 + i);
        messages.push({ key: value.link_id, value: JSON.stringify(value) });
      }
      await context.messageLog.publish(TOPICS.visitsRaw, messages);
      streamed = due;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await waitFor(async () => (await count()) >= streamBase + streamed, 120_000, { intervalMs: 50, message: 'the streamed rows' });
  const streamUsed = process.cpuUsage(streamCpu);
  const streamInserts =
    ((await context.metrics.insertBatchSize.get()).values.find((value) => value.metricName === 'visits_insert_batch_size_count')?.value ?? 0) - insertsBefore;
  console.log(
    `steady stream: ${streamed} visits at ${streamRate}/s over 50 links: ${streamInserts} inserts, ${(streamed / Math.max(1, streamInserts)).toFixed(0)} rows each; process CPU per visit ${((streamUsed.user + streamUsed.system) / streamed).toFixed(1)} µs (publishing included)`,
  );
  await enricher.stop();
  await eventsTaken?.stop();

  // ClickHouse's share of a visit's cost: as many visits again, enriched and encoded beforehand (not
  // timed), then inserted as the enricher's batches one after another with nothing else running.
  // Storing alone: chDB's parsing, the statistics views and the merges that start meanwhile.
  const geo = await openGeoLookup();
  const batchSize = context.config.enricherBatch.size;
  const inserts = [];
  for (let start = 0; start < total; start += batchSize) {
    const visits = Array.from({ length: Math.min(batchSize, total - start) }, (_, offset) => ({ ...visit(start + offset), subdomain: `${subdomain}-db` }));
    inserts.push(
      await encodeVisits(visits, (raw) => ({ ...enrich(raw, geo), visitor_hash: visitorHash('bench', raw.ip_public, raw.user_agent), is_unique: 0 })),
    );
  }
  const storing = performance.now();
  const storingCpu = process.cpuUsage();
  for (const insert of inserts) await context.analytics.insertEncoded(insert);
  const storingSeconds = (performance.now() - storing) / 1000;
  const storedCpu = process.cpuUsage(storingCpu);
  const storeUs = (storedCpu.user + storedCpu.system) / total;
  console.log(
    `ClickHouse alone (${total} rows encoded beforehand, ${inserts.length} inserts of up to ${batchSize}): ${(total / storingSeconds).toFixed(0)} rows/s, ${storeUs.toFixed(1)} µs of process CPU per row: at ${TARGET} visits/s storing alone takes ${((TARGET * storeUs) / 1e6).toFixed(2)} of the ${cpus().length} cores`,
  );
  console.log(`pipeline throughput: ${rate.toFixed(0)} visits/s per enricher (target ≥ ${TARGET}): ${rate >= TARGET ? 'within target' : 'BELOW target'}`);
});
