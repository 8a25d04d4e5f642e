// What packing the visits of one link into one Kafka record (KAFKA_PACK_MESSAGES) saves, by how
// concentrated the traffic is, through the platform's own Kafka log (shared/message-log/kafka.ts)
// against the broker of `scripts/services-up.sh`:
//   source <services env> && bash bench/run.sh kafka-pack [runs] [messages]
// Producer: publishes of 1 000 visits (the forwarder's batch), each a visit's JSON of about 500
// bytes keyed by link id. Consumer: the log's consumer in a group of its own, as the enricher runs
// it (maxBatch 10 000, maxWaitMs 500), its handler only counting. CPU is this process's user +
// system time (every thread) over each phase, per visit; the broker's own is not in it. Traffic
// shapes: one link; links drawn uniformly from 50 and from 1 000; and links of a Zipf law (s = 1) over
// 1 000, where a few links take most visits, as on a link host. Each shape runs unpacked
// (KAFKA_PACK_MESSAGES=1) and packed (500), each on topics of its own; the runs alternate which
// goes first, and the table gives the median and the range.
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Kafka, logLevel } from 'kafkajs';
import { createLogger } from '#shared/logger.js';
import { createKafkaLog } from '#shared/message-log/kafka.js';
import type { LogMessage } from '#shared/message-log/message-log.js';
import { TOPIC_NAMES, TOPICS } from '#shared/message-log/topics.js';
import { createMetrics } from '#shared/metrics.js';
import { sampleVisit } from './lib/sample-visit.js';

const runs = Number(process.argv[2] ?? 3);
const total = Number(process.argv[3] ?? 50_000);
const BATCH = 1_000;
const brokers = (process.env.KAFKA_BROKERS ?? '').split(',').filter(Boolean);
if (brokers.length === 0 || !Number.isInteger(runs) || runs < 1 || !Number.isInteger(total) || total < BATCH || total % BATCH !== 0) {
  console.error('usage: KAFKA_BROKERS=host:port bash bench/run.sh kafka-pack [runs ≥ 1] [messages, a multiple of 1 000]');
  process.exit(1);
}

/** A deterministic generator (mulberry32): every run draws the same links. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Link numbers drawn by Zipf's law (s = 1) over `count` links: the inverse of its cumulative weights. */
function zipf(count: number, draw: () => number): () => number {
  const cumulative: number[] = [];
  let sum = 0;
  for (let rank = 1; rank <= count; rank++) cumulative.push((sum += 1 / rank));
  return () => {
    const target = draw() * sum;
    let low = 0;
    let high = count - 1;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (cumulative[middle]! < target) low = middle + 1;
      else high = middle;
    }
    return low;
  };
}

const SHAPES: { name: string; link: (draw: () => number) => () => number }[] = [
  { name: 'one link', link: () => () => 0 },
  { name: '50 links, uniform', link: (draw) => () => Math.floor(draw() * 50) },
  { name: '1 000 links, uniform', link: (draw) => () => Math.floor(draw() * 1_000) },
  { name: '1 000 links, Zipf', link: (draw) => zipf(1_000, draw) },
];

/** The visits of one run of a shape, in publishes of BATCH, keyed by link id. */
function visits(link: () => number): LogMessage[][] {
  return Array.from({ length: total / BATCH + 1 }, (_, b) =>
    Array.from({ length: BATCH }, (_, n) => {
      const linkNumber = link();
      return sampleVisit(b * BATCH + n, { id: `0193a1f2-7c1e-7d3a-9b1e-${String(linkNumber).padStart(12, '0')}`, slug: `s${linkNumber}` });
    }),
  );
}

interface Phase {
  /** CPU µs of this process per visit. */
  cpuUs: number;
}

/** This process's CPU (user + system, all threads) over `body`, per visit. */
async function measured(messages: number, body: () => Promise<void>): Promise<Phase> {
  const before = process.cpuUsage();
  await body();
  const cpu = process.cpuUsage(before);
  return { cpuUs: (cpu.user + cpu.system) / messages };
}

const silent = createLogger({ logLevel: 'silent' });
const admin = new Kafka({ clientId: 'bench-kafka-pack', brokers, logLevel: logLevel.NOTHING }).admin();
await admin.connect();
const prefixes: string[] = [];

/** One shape, packed or not: publishes every batch (the first a warm-up), then consumes them all. */
async function runOnce(batches: LogMessage[][], packMessages: number): Promise<{ produce: Phase; consume: Phase; records: number }> {
  const topicPrefix = `bench.pack.${randomUUID().slice(0, 8)}.`;
  prefixes.push(topicPrefix);
  const log = createKafkaLog({ brokers, clientId: 'bench-kafka-pack', topicPrefix, partitions: 6, packMessages }, silent, createMetrics());
  try {
    await log.publish(TOPICS.visitsRaw, batches[0]!);
    const produce = await measured(total, async () => {
      for (const batch of batches.slice(1)) await log.publish(TOPICS.visitsRaw, batch);
    });
    const records = (await admin.fetchTopicOffsets(`${topicPrefix}${TOPICS.visitsRaw}`)).reduce((sum, { high }) => sum + Number(high), 0);
    let seen = 0;
    const everything = total + BATCH;
    const consume = await measured(everything, async () => {
      let finished!: () => void;
      const done = new Promise<void>((resolve) => (finished = resolve));
      const consumer = await log.consume({
        groupId: 'bench',
        topic: TOPICS.visitsRaw,
        maxBatch: 10_000,
        maxWaitMs: 500,
        concurrency: 2,
        handler: async (messages) => {
          seen += messages.length;
          if (seen >= everything) finished();
        },
      });
      await done;
      await consumer.stop();
    });
    return { produce, consume, records };
  } finally {
    await log.close();
  }
}

const started = performance.now();
console.log(`${runs} runs of ${total} visits (+${BATCH} warm-up) a shape and setting, publishes of ${BATCH}, brokers ${brokers.join(',')}`);
const results = new Map<string, { produce: number[]; consume: number[]; records: number[] }>();
try {
  for (let run = 1; run <= runs; run++) {
    for (const shape of SHAPES) {
      const batches = visits(shape.link(random(run * 7919)));
      const settings = run % 2 === 1 ? [1, 500] : [500, 1];
      for (const packMessages of settings) {
        const label = `${shape.name}, ${packMessages === 1 ? 'unpacked' : 'packed'}`;
        const result = await runOnce(batches, packMessages);
        const entry = results.get(label) ?? { produce: [], consume: [], records: [] };
        entry.produce.push(result.produce.cpuUs);
        entry.consume.push(result.consume.cpuUs);
        entry.records.push(result.records);
        results.set(label, entry);
        console.log(
          `run ${run} ${label}: ${result.records} records (${((total + BATCH) / result.records).toFixed(1)} visits each); produce ${result.produce.cpuUs.toFixed(1)} µs/visit, consume ${result.consume.cpuUs.toFixed(1)} µs/visit`,
        );
        await sleep(200);
      }
    }
  }
} finally {
  const created = (await admin.listTopics()).filter((topic) => prefixes.some((prefix) => topic.startsWith(prefix)));
  await admin.deleteTopics({ topics: created }).catch(() => undefined);
  await admin.disconnect();
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const spread = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return `${median(values).toFixed(1)} (${sorted[0]!.toFixed(1)}–${sorted.at(-1)!.toFixed(1)})`;
};
console.log('\n| traffic, setting | visits a record | produce CPU µs/visit | consume CPU µs/visit | both | packed against unpacked |');
console.log('|---|---|---|---|---|---|');
for (const shape of SHAPES) {
  const unpacked = results.get(`${shape.name}, unpacked`)!;
  const unpackedBoth = median(unpacked.produce) + median(unpacked.consume);
  for (const setting of ['unpacked', 'packed']) {
    const entry = results.get(`${shape.name}, ${setting}`)!;
    const both = median(entry.produce) + median(entry.consume);
    console.log(
      `| ${shape.name}, ${setting} | ${((total + BATCH) / median(entry.records)).toFixed(1)} | ${spread(entry.produce)} | ${spread(entry.consume)} | ${both.toFixed(1)} | ${
        setting === 'packed' ? `${((both / unpackedBoth) * 100).toFixed(0)} %` : '—'
      } |`,
    );
  }
}
console.log(
  `\nmedian (lowest–highest) of the runs; CPU is this process only (the broker apart); topics ${TOPIC_NAMES.length} a setting, deleted after; ${((performance.now() - started) / 1000).toFixed(0)} s`,
);
process.exit(0);
