// What the Kafka path costs per message, client by client, against the real broker of
// `scripts/services-up.sh`:
//   source <services env> && bash bench/run.sh kafka-clients [runs] [messages] [batch]
// Producer: batches of 1 000 visit messages (`batch`: the edge's largest on Kafka, smaller when it
// is not busy), each a visit's JSON of about 500 bytes keyed by link id, one request in flight,
// acks from all replicas, idempotent. Consumer:
// the same messages read back in a group of its own, offsets committed after each batch (as the
// enricher does, after its handler). CPU is this process's user + system time (every thread: the
// compression helpers too) over the phase, divided by the messages; the broker's own CPU is not in
// it. Each run takes every client in turn (starting with another one each run) on a topic of its own
// (6 partitions), after a warm-up batch; the table gives the median and the range of the runs.
//
// Clients: kafkajs 2.2.4 (the platform's) with gzip (before LZ4), none and lz4 (lz4-napi as its codec);
// @platformatic/kafka 1.x (the 2.x line needs Node 22) with none, gzip and lz4. zstd runs nowhere
// here: kafkajs's codec (@kafkajs/zstd) does not build, @mongodb-js/zstd downloads its library at
// install, and @platformatic/kafka's zstd needs node:zlib's, which Node 20 lacks.
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Consumer as PlatformaticConsumer, Producer as PlatformaticProducer, stringDeserializers, stringSerializers } from '@platformatic/kafka';
import kafkajs, { CompressionTypes, Kafka, logLevel } from 'kafkajs';
import { compressFrameSync, decompressFrameSync } from 'lz4-napi';
import { sampleVisit } from './lib/sample-visit.js';

const runs = Number(process.argv[2] ?? 3);
const total = Number(process.argv[3] ?? 20_000);
const BATCH = Number(process.argv[4] ?? 1_000);
const PARTITIONS = 6;
const brokers = (process.env.KAFKA_BROKERS ?? '').split(',').filter(Boolean);
if (
  brokers.length === 0 ||
  !Number.isInteger(runs) ||
  runs < 1 ||
  !Number.isInteger(total) ||
  !Number.isInteger(BATCH) ||
  BATCH < 1 ||
  total < BATCH ||
  total % BATCH !== 0
) {
  console.error('usage: KAFKA_BROKERS=host:port bash bench/run.sh kafka-clients [runs ≥ 1] [messages, a multiple of batch] [batch]');
  process.exit(1);
}

// kafkajs's LZ4 codec, on lz4-napi's frame format (Kafka's LZ4 is the LZ4 frame).
// CommonJS: its codec registry is not a named export Node can see.
kafkajs.CompressionCodecs[CompressionTypes.LZ4] = () => ({
  compress: ({ buffer }: { buffer: Buffer }) => Promise.resolve(compressFrameSync(buffer)),
  decompress: (buffer: Buffer) => Promise.resolve(decompressFrameSync(buffer)),
});

/** A batch of visit messages as the edge publishes them: the visit's JSON, keyed by link id. */
function visitBatch(from: number): { key: string; value: string }[] {
  return Array.from({ length: BATCH }, (_, n) => sampleVisit(from + n, { id: `l_bench${(from + n) % 50}`, slug: `s${(from + n) % 50}` }));
}

interface Phase {
  /** CPU µs of this process per message. */
  cpuUs: number;
  perSec: number;
}

/** Runs `body` and measures this process's CPU (user + system, all threads) and wall time over it. */
async function measured(messages: number, body: () => Promise<{ wallMs?: number } | void>): Promise<Phase> {
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const result = await body();
  const cpu = process.cpuUsage(cpuBefore);
  const wallMs = result?.wallMs ?? performance.now() - started;
  return { cpuUs: (cpu.user + cpu.system) / messages, perSec: (messages / wallMs) * 1000 };
}

interface Client {
  name: string;
  /** Publishes warm-up + measured batches to `topic`; returns the measured phase. */
  produce(topic: string, batches: { key: string; value: string }[][]): Promise<Phase>;
  /** Reads `count` messages of `topic` in a new group, committing after each batch. */
  consume(topic: string, count: number): Promise<Phase>;
}

const kafka = new Kafka({ clientId: 'bench-kafka-clients', brokers, logLevel: logLevel.WARN });

function kafkajsClient(compression: CompressionTypes, label: string): Client {
  return {
    name: `kafkajs 2.2.4, ${label}`,
    async produce(topic, [warmup, ...batches]) {
      const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
      await producer.connect();
      try {
        await producer.send({ topic, compression, acks: -1, messages: warmup! });
        return await measured(batches.length * BATCH, async () => {
          for (const messages of batches) await producer.send({ topic, compression, acks: -1, messages });
        });
      } finally {
        await producer.disconnect();
      }
    },
    async consume(topic, count) {
      const consumer = kafka.consumer({ groupId: `bench.${randomUUID()}`, maxBytesPerPartition: 4 * 1024 * 1024, sessionTimeout: 30_000 });
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      let seen = 0;
      let first = 0;
      let resolveDone!: () => void;
      const done = new Promise<void>((resolve) => (resolveDone = resolve));
      try {
        return await measured(count, async () => {
          await consumer.run({
            autoCommit: false,
            eachBatchAutoResolve: false,
            // eslint-disable-next-line @typescript-eslint/unbound-method -- kafkajs hands closures over its batch
            eachBatch: async ({ batch, resolveOffset, commitOffsetsIfNecessary, uncommittedOffsets, heartbeat }) => {
              if (seen === 0) first = performance.now();
              for (let start = 0; start < batch.messages.length; start += BATCH) {
                const slice = batch.messages.slice(start, start + BATCH);
                // What a handler does first: key and value as text.
                for (const message of slice) if (message.value!.toString().length === 0) throw new Error('empty message');
                resolveOffset(slice.at(-1)!.offset);
                await commitOffsetsIfNecessary(uncommittedOffsets());
                await heartbeat();
                seen += slice.length;
              }
              if (seen >= count) resolveDone();
            },
          });
          await done;
          return { wallMs: performance.now() - first };
        });
      } finally {
        await consumer.disconnect();
      }
    },
  };
}

function platformaticClient(compression: 'none' | 'gzip' | 'lz4'): Client {
  const base = { clientId: 'bench-kafka-clients', bootstrapBrokers: brokers };
  return {
    name: `@platformatic/kafka 1.x, ${compression}`,
    async produce(topic, [warmup, ...batches]) {
      const producer = new PlatformaticProducer({ ...base, serializers: stringSerializers, idempotent: true, acks: -1, compression, autocreateTopics: false });
      const send = (messages: { key: string; value: string }[]) => producer.send({ messages: messages.map((message) => ({ ...message, topic })) });
      try {
        await send(warmup!);
        return await measured(batches.length * BATCH, async () => {
          for (const messages of batches) await send(messages);
        });
      } finally {
        await producer.close();
      }
    },
    async consume(topic, count) {
      const consumer = new PlatformaticConsumer({
        ...base,
        groupId: `bench.${randomUUID()}`,
        deserializers: stringDeserializers,
        maxBytesPerPartition: 4 * 1024 * 1024,
        sessionTimeout: 30_000,
        heartbeatInterval: 3_000,
      });
      try {
        return await measured(count, async () => {
          const stream = await consumer.consume({ topics: [topic], mode: 'earliest', autocommit: false, maxWaitTime: 100 });
          let seen = 0;
          let first = 0;
          let pending = new Map<number, bigint>();
          let inBatch = 0;
          const commit = async () => {
            const offsets = [...pending].map(([partition, offset]) => ({ topic, partition, offset: offset + 1n, leaderEpoch: -1 }));
            pending = new Map();
            inBatch = 0;
            await consumer.commit({ offsets });
          };
          // A batch: what the stream hands over in one go, at most BATCH messages, then a commit.
          for await (const message of stream) {
            if (seen === 0) first = performance.now();
            if (message.value.length === 0) throw new Error('empty message');
            pending.set(message.partition, message.offset);
            seen++;
            inBatch++;
            if (inBatch >= BATCH || stream.readableLength === 0) await commit();
            if (seen >= count) break;
          }
          if (inBatch > 0) await commit();
          return { wallMs: performance.now() - first };
        });
      } finally {
        await new Promise<void>((resolve, reject) => consumer.close(true, (error) => (error ? reject(error) : resolve())));
      }
    },
  };
}

const clients: Client[] = [
  kafkajsClient(CompressionTypes.GZIP, 'gzip (today)'),
  kafkajsClient(CompressionTypes.None, 'none'),
  kafkajsClient(CompressionTypes.LZ4, 'lz4 (lz4-napi)'),
  platformaticClient('none'),
  platformaticClient('gzip'),
  platformaticClient('lz4'),
];

const admin = kafka.admin();
await admin.connect();
const batches = Array.from({ length: total / BATCH + 1 }, (_, i) => visitBatch(i * BATCH));
const bytes = batches.flat().reduce((sum, message) => sum + message.value.length, 0) / (total + BATCH);
console.log(`${runs} runs of ${total} messages (+${BATCH} warm-up) a client, ${bytes.toFixed(0)} bytes a message on average, brokers ${brokers.join(',')}`);
const results = new Map<string, { produce: Phase[]; consume: Phase[] }>(clients.map((client) => [client.name, { produce: [], consume: [] }]));
const topics: string[] = [];
try {
  for (let run = 1; run <= runs; run++) {
    // Each run starts with another client: what a client leaves behind (garbage, a colder JIT) falls on all in turn.
    for (const client of [...clients.slice((run - 1) % clients.length), ...clients.slice(0, (run - 1) % clients.length)]) {
      const topic = `bench.kafka-clients.${randomUUID()}`;
      topics.push(topic);
      await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: PARTITIONS }] });
      const produced = await client.produce(topic, batches);
      await sleep(200);
      const consumed = await client.consume(topic, total + BATCH);
      results.get(client.name)!.produce.push(produced);
      results.get(client.name)!.consume.push(consumed);
      console.log(
        `run ${run} ${client.name}: produce ${produced.cpuUs.toFixed(1)} µs/msg ${produced.perSec.toFixed(0)} msg/s; consume ${consumed.cpuUs.toFixed(1)} µs/msg ${consumed.perSec.toFixed(0)} msg/s`,
      );
    }
  }
} finally {
  await admin.deleteTopics({ topics }).catch(() => undefined);
  await admin.disconnect();
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const range = (values: number[], digits: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return `${median(values).toFixed(digits)} (${sorted[0]!.toFixed(digits)}–${sorted.at(-1)!.toFixed(digits)})`;
};
const baseline = results.get(clients[0]!.name)!;
const base = median(baseline.produce.map((phase) => phase.cpuUs)) + median(baseline.consume.map((phase) => phase.cpuUs));
console.log('\n| client, compression | produce CPU µs/msg | produce msg/s | consume CPU µs/msg | consume msg/s | both, vs the first row |');
console.log('|---|---|---|---|---|---|');
for (const [name, { produce, consume }] of results) {
  const both = median(produce.map((phase) => phase.cpuUs)) + median(consume.map((phase) => phase.cpuUs));
  console.log(
    `| ${name} | ${range(
      produce.map((phase) => phase.cpuUs),
      1,
    )} | ${range(
      produce.map((phase) => phase.perSec),
      0,
    )} | ${range(
      consume.map((phase) => phase.cpuUs),
      1,
    )} | ${range(
      consume.map((phase) => phase.perSec),
      0,
    )} | ${both.toFixed(1)} µs, ${((both / base) * 100).toFixed(0)} % |`,
  );
}
console.log('\nmedian (lowest–highest) of the runs; CPU is this process only (the broker apart).');
process.exit(0);
