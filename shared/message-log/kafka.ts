import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import kafkajs, { CompressionTypes, Kafka, logLevel, type Admin, type Consumer as KafkaConsumer, type KafkaMessage, type Producer } from 'kafkajs';
import { compressFrameSync, decompressFrameSync } from 'lz4-napi';
import type { Logger } from '../logger.js';
import { stopKafkajsIdleLoop } from './kafkajs-idle-loop.js';
import type { Metrics } from '../metrics.js';
import { packMessages, unpackRecord } from './kafka-pack.js';
import { TOPIC_NAMES, TOPICS, type Topic } from './topics.js';
import {
  consumerBookkeeping,
  keyedQueue,
  mergePartitions,
  type Consumer,
  type ConsumeOptions,
  type ConsumerStatus,
  type GroupPosition,
  type LogMessage,
  type StoredLogMessage,
  type MessageLog,
} from './message-log.js';

/** Most messages of one key packed into one record by default (KAFKA_PACK_MESSAGES). */
export const DEFAULT_PACK_MESSAGES = 500;
/** Most records per producer request (see publish). */
const SEND_CHUNK = 1_000;
/** Longest a peek or a take may take with its short-lived consumer (group join and fetches). */
const INSPECT_TIMEOUT_MS = 20_000;
/** Longest a removal waits for another process's member to leave the group it sets (a take elsewhere). */
const BUSY_GROUP_WAIT_MS = 15_000;
/**
 * How long the group waits for a silent member before its partitions go to another one (a member
 * SIGKILLed, a host gone): a stock broker's least (group.min.session.timeout.ms, 6 s), so that a
 * restarted or surviving member consumes them again within about that (docs/operations.md, "Consumer
 * recovery on Kafka"). kafkajs has no static membership (KIP-345), which would skip the wait for a member
 * that restarts.
 */
export const SESSION_TIMEOUT_MS = 6_000;
/** A heartbeat at most this often: several within a session, so that one lost or late one costs nothing. */
const HEARTBEAT_INTERVAL_MS = 1_000;
/** How often a call held for minIntervalMs, or a consumer's pause after a partial batch, looks at whether its consumer is stopping. */
const HOLD_CHECK_MS = 100;
/**
 * How long a rebalance waits for the members to join again (one busy with a batch joins once the
 * batch ends, or gives it up: BatchControl.stopping). Past it a member is dropped from the group and
 * its batch is redelivered.
 */
const REBALANCE_TIMEOUT_MS = 30_000;
/**
 * While a handler runs, this consumer heartbeats for it (kafkajs heartbeats only between batches)
 * up to this long: the session timeout no longer limits a batch. A handler that takes longer
 * heartbeats itself (BatchControl.heartbeat); one that hangs loses its partitions after this plus
 * the session timeout, as it did with the former 30 s session.
 */
const HANDLER_HEARTBEAT_MS = 30_000;

// Kafka's LZ4 is the LZ4 frame format: lz4-napi's (kafkajs ships gzip only; its codec registry is a
// CommonJS export Node's named imports cannot see). LZ4 costs the producer and the consumer a third
// to a half less CPU than gzip, no more than no compression at all, and shrinks visits about 7:1
// (docs/benchmarks.md, "Kafka clients").
kafkajs.CompressionCodecs[CompressionTypes.LZ4] = () => ({
  compress: ({ buffer }: { buffer: Buffer }) => Promise.resolve(compressFrameSync(buffer)),
  decompress: (buffer: Buffer) => Promise.resolve(decompressFrameSync(buffer)),
});
// Without a 1 ms timer loop on every broker connection (kafkajs-idle-loop.ts).
stopKafkajsIdleLoop();

/**
 * The topics whose messages are packed, several of one key to a record (kafka-pack.ts): the hot
 * ones. Dead letters and events stay one message a record (the dead-letter tools read records).
 */
const PACKED_TOPICS: ReadonlySet<Topic> = new Set([TOPICS.visitsRaw, TOPICS.trackerRaw]);

/**
 * The shortest broker hold of a consumer's fetch (kafkajs's maxWaitTimeInMs). A consumer whose batch
 * wait is at least this long and that does not space its calls (minIntervalMs) lets the broker hold
 * each fetch up to its wait for about a MiB. A shorter wait (the webhook dispatcher's 50 ms) would
 * be a fetch that often at idle, 20 a second; and a consumer spacing its calls (the enricher's
 * ENRICHER_INSERT_INTERVAL_MS) would leave what is published while a call waits its turn to the
 * fetch after, a second later. Those fetch with minBytes 1 (a message is fetched as soon as it is
 * there, an empty fetch held this long) and pause after a partial batch instead, until their wait
 * has passed and the next call may start (docs/benchmarks.md, "The production path"). kafkajs's
 * stop waits for the fetch in flight, so this also bounds an idle consumer's stop.
 */
const IDLE_FETCH_WAIT_MS = 500;

/** Messages in a fetched partition batch's records, packed ones counted one by one. */
const unpackedCount = (records: LogMessage[][]) => records.reduce((sum, messages) => sum + messages.length, 0);

/** What every batch is compressed with. */
const COMPRESSION = CompressionTypes.LZ4;

/** Errors of a heartbeat that mean the group has moved on without this member's batch: a rebalance, or the member dropped. */
const GROUP_MOVED = new Set(['REBALANCE_IN_PROGRESS', 'UNKNOWN_MEMBER_ID', 'ILLEGAL_GENERATION', 'FENCED_INSTANCE_ID']);

/**
 * Heartbeats the group every HEARTBEAT_INTERVAL_MS while a handler runs, for at most
 * HANDLER_HEARTBEAT_MS. A heartbeat refused because the group moved on marks the batch as given up
 * (`moved`: BatchControl.stopping), and no more are sent; other failures (the broker unreachable)
 * are left to the consumer's own next heartbeat.
 */
function heartbeatsDuringHandler(heartbeat: () => Promise<void>) {
  let moved = false;
  const started = Date.now();
  const timer = setInterval(() => {
    if (Date.now() - started >= HANDLER_HEARTBEAT_MS) {
      clearInterval(timer);
      return;
    }
    heartbeat().catch((error: unknown) => {
      if (!GROUP_MOVED.has((error as { type?: string }).type ?? '')) return;
      moved = true;
      clearInterval(timer);
    });
  }, HEARTBEAT_INTERVAL_MS);
  timer.unref();
  return {
    moved: () => moved,
    stop: () => clearInterval(timer),
  };
}

/** A kafkajs message as the log hands it over: key and value as text, headers as text. */
function toLogMessage(message: KafkaMessage): LogMessage {
  return {
    key: message.key?.toString() ?? '',
    value: message.value?.toString() ?? '',
    headers: Object.fromEntries(Object.entries(message.headers ?? {}).map(([key, value]) => [key, value?.toString() ?? ''])),
  };
}

export interface KafkaLogOptions {
  brokers: string[];
  clientId: string;
  topicPrefix: string;
  partitions?: number;
  /** Most messages of one key packed into one record on the hot topics (KAFKA_PACK_MESSAGES; 1: none). */
  packMessages?: number;
}

/** One partition's slice, waiting to be handed to the handler with the slices of other partitions. */
interface PartitionSlice {
  messages: LogMessage[];
  redelivered: boolean;
  heartbeat: () => Promise<void>;
  /** Whether this partition's batch was given up (the consumer stopping, a seek). */
  stopping: () => boolean;
  /**
   * Whether the partition holds more than this slice (the rest of its fetched batch, or messages
   * beyond the fetch: a backlog): a call holding it is not held for minIntervalMs.
   */
  more?: boolean;
  /** Resolves the slice's last offset. */
  resolve: () => void;
  /** Commits the offsets resolved. */
  commit: () => Promise<void>;
}

/** What a handler threw, as an Error (the rejection of each slice of its call). */
const asError = (error: unknown) => (error instanceof Error ? error : new Error(`handler failed: ${JSON.stringify(error)}`));

/**
 * Hands the slices of several partitions to the handler as one call: a partition's slice that
 * arrives while a call is forming joins it (kafkajs hands the batches of one fetch over in the
 * same event-loop turn, each partition on its own), up to maxBatch messages, so that the handler
 * stores a fetch at once instead of a partition at a time (ClickHouse: fewer, larger inserts). A
 * call forms until the turn ends (setImmediate: no delay) and, with `concurrency` calls in flight,
 * until one ends. The promise of each slice settles with its call: once the handler
 * succeeded, every joined partition's offset is resolved and the offsets are committed; a failure
 * rejects every slice (each partition's batch is redelivered). A partition hands over its next slice
 * only once its promise settled, so it is never twice in a call or in flight.
 */
export function partitionJoiner(handler: ConsumeOptions['handler'], maxBatch: number, concurrency: number, minIntervalMs = 0) {
  type Waiting = PartitionSlice & { done: () => void; failed: (error: Error) => void };
  /**
   * Calls not started yet, oldest first; `ready` once the turn their first slice came in has ended;
   * `closed` once a slice did not fit or one of its partitions holds more (it is not held then).
   */
  type Forming = { slices: Waiting[]; size: number; ready: boolean; closed: boolean; beatAt: number };
  const forming: Forming[] = [];
  let inFlight = 0;
  // When the last call started, and the timer that looks again at a partial call held for minIntervalMs.
  let lastCall = -Infinity;
  let due: NodeJS.Timeout | undefined;
  /** The earliest time (performance.now()) a call of fewer than maxBatch messages may start. */
  const nextPartialAt = () => lastCall + minIntervalMs;
  /** Whether a call waits for minIntervalMs: a partial one, open, and its consumer not stopping. */
  const held = (group: Forming) => group.size < maxBatch && !group.closed && !group.slices.some((slice) => slice.stopping());

  const call = async (slices: Waiting[]) => {
    const [first] = slices;
    const beats = heartbeatsDuringHandler(first!.heartbeat);
    try {
      await handler(
        slices.flatMap((slice) => slice.messages),
        {
          heartbeat: first!.heartbeat,
          stopping: () => beats.moved() || slices.some((slice) => slice.stopping()),
          redelivered: slices.some((slice) => slice.redelivered),
        },
      );
    } catch (error) {
      for (const slice of slices) slice.failed(asError(error));
      return;
    } finally {
      beats.stop();
    }
    try {
      for (const slice of slices) slice.resolve();
      await first!.commit();
    } catch (error) {
      for (const slice of slices) slice.failed(asError(error));
      return;
    }
    for (const slice of slices) slice.done();
  };

  const pump = () => {
    while (inFlight < concurrency && forming[0]?.ready) {
      const group = forming[0];
      const wait = held(group) ? nextPartialAt() - performance.now() : 0;
      if (wait > 0) {
        // Held: looked at again every HOLD_CHECK_MS (a stopping consumer's call goes at once), its
        // group heartbeated meanwhile (kafkajs heartbeats only between batches).
        due ??= setTimeout(
          () => {
            due = undefined;
            if (performance.now() - group.beatAt >= HEARTBEAT_INTERVAL_MS) {
              group.beatAt = performance.now();
              // A refused heartbeat (a rebalance) turns the slices' stopping() true: the call then goes, and fails.
              group.slices[0]!.heartbeat().catch(() => undefined);
            }
            pump();
          },
          Math.min(wait, HOLD_CHECK_MS),
        );
        return;
      }
      const { slices } = forming.shift()!;
      lastCall = performance.now();
      inFlight++;
      void call(slices).finally(() => {
        inFlight--;
        pump();
      });
    }
  };

  const join = (slice: PartitionSlice) =>
    new Promise<void>((resolve, reject) => {
      let group = forming.at(-1);
      if (!group || group.size + slice.messages.length > maxBatch) {
        // The call before is as large as it gets: it goes without waiting for the interval.
        if (group) group.closed = true;
        const formed: Forming = { slices: [], size: 0, ready: false, closed: false, beatAt: performance.now() };
        forming.push(formed);
        setImmediate(() => {
          formed.ready = true;
          pump();
        });
        group = formed;
      }
      group.slices.push({ ...slice, done: resolve, failed: reject });
      group.size += slice.messages.length;
      if (slice.more) group.closed = true;
      // A held call that this slice filled or closed goes now.
      pump();
    });
  return Object.assign(join, { nextPartialAt });
}

/**
 * What may have been handed to a handler of each partition, to tell a batch's
 * BatchControl.redelivered. Per partition since this member joined its group: the offset after the
 * batch handed over last (`next`), and the offset below which messages may have been handed over
 * before (`handed`). A batch is redelivered when it starts before `handed` or anywhere but `next`.
 *
 * - After joining, this member cannot know how far another member, or this process before a crash,
 *   got without committing: up to the partition's high watermark at the first fetch (the fetch
 *   comes after the join, so every message handed over before is below it). The batches up to it
 *   are redelivered, not only the first one: the first may come cut shorter than the batch handed
 *   over before the crash.
 * - A redelivery after a failure may also come shorter than the first delivery: the batch after it
 *   starts at its `next` and is still below `handed`.
 */
export function handedOffsets() {
  const partitions = new Map<number, { next: bigint; handed: bigint }>();
  const max = (a: bigint, b: bigint) => (a > b ? a : b);
  return {
    /** Records a batch (its first and last offsets, and the high watermark of its fetch) and says whether it is redelivered. */
    handOver(partition: number, firstOffset: string, lastOffset: string, highWatermark: string): boolean {
      const first = BigInt(firstOffset);
      const next = BigInt(lastOffset) + 1n;
      const known = partitions.get(partition);
      const handed = known ? known.handed : max(BigInt(highWatermark), first);
      partitions.set(partition, { next, handed: max(handed, next) });
      return !known || first !== known.next || first < handed;
    },
    /** Forgets every partition (the group was joined again: partitions may have moved meanwhile). */
    clear() {
      partitions.clear();
    },
  };
}

/**
 * Kafka message log through kafkajs: an idempotent, LZ4-compressing producer; consumers that
 * resolve and commit offsets only after their batch handler succeeded, heartbeating meanwhile.
 */
export function createKafkaLog(options: KafkaLogOptions, log: Logger, metrics: Metrics): MessageLog {
  const kafka = new Kafka({
    clientId: options.clientId,
    brokers: options.brokers,
    connectionTimeout: 3_000,
    requestTimeout: 10_000,
    retry: { retries: 5, initialRetryTime: 200 },
    logLevel: logLevel.WARN,
    logCreator:
      () =>
      ({ namespace, level, log: entry }) => {
        const { message, ...rest } = entry;
        const child = log.child({ component: 'kafka', namespace });
        if (level === logLevel.ERROR) child.error(rest, message);
        else if (level === logLevel.WARN) child.warn(rest, message);
      },
  });
  const name = (topic: Topic) => options.topicPrefix + topic;
  let producer: Producer | undefined;
  let producerReady: Promise<Producer> | undefined;
  let admin: Admin | undefined;
  let adminReady: Promise<Admin> | undefined;
  let topicsReady: Promise<void> | undefined;
  const consumers = new Map<Consumer, ConsumerStatus>();

  /**
   * Messages of the topic the group has not committed (high watermark minus committed offset, per
   * partition: positionsOf), also set as the lag metric; null when the broker cannot tell.
   */
  const sampleLag = async ({ group, topic }: ConsumerStatus): Promise<number | null> => {
    try {
      const lag = (await positionsOf(topic, options.topicPrefix + group)).reduce((sum, { committed, end }) => sum + end - committed, 0);
      metrics.consumerLag.set({ group, topic }, lag);
      return lag;
    } catch {
      return null;
    }
  };

  const getAdmin = () =>
    (adminReady ??= (async () => {
      admin = kafka.admin();
      await admin.connect();
      return admin;
    })().catch((error) => {
      adminReady = undefined;
      throw error;
    }));

  /** Creates the platform's topics once (idempotent: existing topics are left alone). */
  const ensureTopics = () =>
    (topicsReady ??= (async () => {
      const client = await getAdmin();
      // A broker busy creating many topics may answer the leader wait with "does not host this
      // topic-partition" (retriable) for a topic it has just created: look again a little later.
      for (let attempt = 1; ; attempt++) {
        const existing = new Set(await client.listTopics());
        const missing = TOPIC_NAMES.map(name).filter((topic) => !existing.has(topic));
        if (missing.length === 0) return;
        try {
          await client.createTopics({
            waitForLeaders: true,
            topics: missing.map((topic) => ({ topic, numPartitions: options.partitions ?? 6 })),
          });
          return;
        } catch (error) {
          if (attempt >= 5 || !(error as { retriable?: boolean }).retriable) throw error;
          await sleep(250 * attempt);
        }
      }
    })().catch((error) => {
      topicsReady = undefined;
      throw error;
    }));

  const getProducer = () =>
    (producerReady ??= (async () => {
      await ensureTopics();
      producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
      await producer.connect();
      return producer;
    })().catch((error) => {
      producerReady = undefined;
      throw error;
    }));

  /**
   * Runs an admin request again on a retriable error, a few times: kafkajs's admin gives up at once on
   * "not the leader for that topic-partition", which a broker answers for a partition it is still
   * loading (a topic just created, a leader moving).
   */
  const retried = async <T>(request: () => Promise<T>): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await request();
      } catch (error) {
        if (attempt >= 5 || !(error as { retriable?: boolean }).retriable) throw error;
        await sleep(200 * attempt);
      }
    }
  };

  /**
   * Where a group stands on a topic, per partition: its committed offset (the oldest message kept
   * when it has none, or retention passed it) and the partition's end (high watermark).
   */
  const positionsOf = async (topic: Topic, fullGroup: string) => {
    const client = await getAdmin();
    const [ends, [committed]] = await retried(() =>
      Promise.all([client.fetchTopicOffsets(name(topic)), client.fetchOffsets({ groupId: fullGroup, topics: [name(topic)] })]),
    );
    const done = new Map((committed?.partitions ?? []).map((entry) => [entry.partition, Number(entry.offset)]));
    return ends.map(({ partition, low, high }) => ({
      partition,
      low: Number(low),
      committed: Math.max(Number(low), done.get(partition) ?? -1),
      end: Number(high),
    }));
  };

  /**
   * Runs `step` once the group has no member (a take of another process ends within its bound),
   * again while the broker says it has one, until BUSY_GROUP_WAIT_MS passed.
   */
  const whenGroupIdle = async <T>(fullGroup: string, step: () => Promise<T>): Promise<T> => {
    const client = await getAdmin();
    const deadline = Date.now() + BUSY_GROUP_WAIT_MS;
    for (;;) {
      const { groups } = await retried(() => client.describeGroups([fullGroup]));
      const state = groups[0]?.state ?? 'Dead';
      if (state === 'Empty' || state === 'Dead') {
        try {
          return await step();
        } catch (error) {
          // kafkajs's setOffsets refuses a group a member joined in between ("must have no running instances").
          if (!/no running instances/.test((error as Error).message) || Date.now() >= deadline) throw error;
        }
      } else if (Date.now() >= deadline) throw new Error(`group ${fullGroup} stayed busy (${state}) for ${BUSY_GROUP_WAIT_MS} ms: nothing removed, try again`);
      await sleep(250);
    }
  };

  /** Reads each partition whole (from its oldest record to `ends`) with a throw-away group, deleted after. */
  const readAll = async (topic: Topic, groupId: string, starts: Map<number, number>, ends: Map<number, number>) => {
    const scanGroup = `${options.topicPrefix}${groupId}.scan.${randomUUID()}`;
    const { read, consumer } = await readPartitions(topic, scanGroup, starts, ends, Number.MAX_SAFE_INTEGER);
    if (consumer) {
      await consumer.disconnect();
      await getAdmin()
        .then((client) => client.deleteGroups([scanGroup]))
        .catch((error: unknown) => log.warn({ err: error, group: scanGroup }, 'could not delete the group of a scan; the broker expires it'));
    }
    return read;
  };

  /** How many partitions the topic has (its metadata). */
  const partitionCount = async (topic: Topic) => {
    const client = await getAdmin();
    const { topics } = await retried(() => client.fetchTopicMetadata({ topics: [name(topic)] }));
    return topics[0]?.partitions.length ?? 1;
  };

  /**
   * Reads each partition from `starts` up to `ends` (at most `limit` messages a partition) with a
   * short-lived consumer of `fullGroup`, which never commits (what a later commit needs, the caller
   * does with the consumer returned, then disconnects it). Bounded by INSPECT_TIMEOUT_MS.
   */
  const readPartitions = async (topic: Topic, fullGroup: string, starts: Map<number, number>, ends: Map<number, number>, limit: number) => {
    const read = new Map<number, StoredLogMessage[]>([...starts.keys()].map((partition) => [partition, []]));
    /** Partitions still to read, with the offset that ends their reading. */
    const wanted = new Map<number, number>();
    for (const [partition, start] of starts) {
      const until = Math.min(ends.get(partition) ?? start, start + limit);
      if (until > start) wanted.set(partition, until);
    }
    if (wanted.size === 0) return { read, consumer: undefined };
    const consumer: KafkaConsumer = kafka.consumer({ groupId: fullGroup, maxWaitTimeInMs: 200, sessionTimeout: 30_000, allowAutoTopicCreation: false });
    await consumer.connect();
    try {
      await consumer.subscribe({ topic: name(topic), fromBeginning: true });
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`reading ${topic} for ${fullGroup} took over ${INSPECT_TIMEOUT_MS} ms`)), INSPECT_TIMEOUT_MS);
        const fail = (error: unknown) => {
          clearTimeout(timer);
          reject(error instanceof Error ? error : new Error(String(error)));
        };
        // kafkajs restarts a consumer after a retriable failure (seeks and pauses are lost then: it
        // starts again from the group's offsets, and the offsets checks below still keep the range).
        consumer.on(consumer.events.CRASH, ({ payload }) => {
          if (!payload.restart) fail(payload.error);
        });
        consumer
          .run({
            autoCommit: false,
            eachBatchAutoResolve: false,
            eachBatch: async ({ batch }) => {
              const until = wanted.get(batch.partition);
              if (until === undefined) return;
              const into = read.get(batch.partition)!;
              for (const message of batch.messages) {
                const offset = Number(message.offset);
                if (offset < starts.get(batch.partition)! || offset >= until) continue;
                if (into.length > 0 && offset <= into.at(-1)!.offset) continue;
                into.push({ ...toLogMessage(message), partition: batch.partition, offset, timestamp: new Date(Number(message.timestamp)).toISOString() });
              }
              if (into.length >= limit || (into.at(-1)?.offset ?? -1) + 1 >= until) {
                wanted.delete(batch.partition);
                consumer.pause([{ topic: name(topic), partitions: [batch.partition] }]);
                if (wanted.size === 0) {
                  clearTimeout(timer);
                  resolve();
                }
              }
            },
          })
          .catch(fail);
        // Before the group is joined (run has created it): applied at the first fetch, so reading starts there.
        const idle = [...starts.keys()].filter((partition) => !wanted.has(partition));
        if (idle.length > 0) consumer.pause([{ topic: name(topic), partitions: idle }]);
        for (const partition of wanted.keys()) consumer.seek({ topic: name(topic), partition, offset: String(starts.get(partition)) });
      });
      return { read, consumer };
    } catch (error) {
      await consumer.disconnect();
      throw error;
    }
  };

  const takeInOrder = keyedQueue();

  return {
    kind: 'kafka',
    async publish(topic, messages) {
      const client = await getProducer();
      // kafkajs groups a send's messages per partition by copying the partition's array for every
      // message (quadratic: 10 000 events of one owner cost about 40 ms). Sends of at most SEND_CHUNK
      // messages, one after the other (the idempotent producer keeps their order).
      const records = PACKED_TOPICS.has(topic) ? packMessages(messages, options.packMessages ?? DEFAULT_PACK_MESSAGES) : messages;
      for (let start = 0; start < records.length; start += SEND_CHUNK) {
        await client.send({ topic: name(topic), compression: COMPRESSION, acks: -1, messages: records.slice(start, start + SEND_CHUNK) });
      }
      metrics.visitLogPublished.inc({ topic }, messages.length);
    },
    async consume({ groupId, topic, handler: untracked, maxBatch = 500, maxWaitMs = 0, minIntervalMs = 0, concurrency = 1 }: ConsumeOptions) {
      await ensureTopics();
      const tracker = consumerBookkeeping(groupId, topic);
      const handler = tracker.track(untracked);
      // Groups carry the prefix too: environments sharing a cluster never share a group (and never
      // rebalance each other's consumers).
      const fullGroup = options.topicPrefix + groupId;
      // A consumer spacing its calls (minIntervalMs) paces its own fetches (below): the broker's hold
      // would leave what is published while the call waits for its turn to the fetch after.
      const brokerHold = maxWaitMs >= IDLE_FETCH_WAIT_MS && minIntervalMs === 0;
      const consumer = kafka.consumer({
        groupId: fullGroup,
        maxBytesPerPartition: 4 * 1024 * 1024,
        sessionTimeout: SESSION_TIMEOUT_MS,
        heartbeatInterval: HEARTBEAT_INTERVAL_MS,
        rebalanceTimeout: REBALANCE_TIMEOUT_MS,
        // Batching by time: a wait of at least IDLE_FETCH_WAIT_MS is the broker's hold (until about a
        // MiB is there or the wait passed); a shorter one is a pause after a partial batch (below),
        // and the fetch returns as soon as a message is there (one that finds none is held
        // IDLE_FETCH_WAIT_MS), so that a short wait does not become a fetch that often at idle.
        ...(brokerHold ? { minBytes: 1024 * 1024, maxWaitTimeInMs: maxWaitMs } : { minBytes: 1, maxWaitTimeInMs: IDLE_FETCH_WAIT_MS }),
      });
      const handed = handedOffsets();
      // A rebalance may have lent a partition to another member in between: nothing is known then.
      consumer.on(consumer.events.GROUP_JOIN, () => handed.clear());
      await consumer.connect();
      await consumer.subscribe({ topic: name(topic), fromBeginning: true });
      const joined = partitionJoiner(handler, maxBatch, Math.max(1, Math.floor(concurrency)), minIntervalMs);
      await consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        // Every partition's batch of a fetch at once, so that the joiner sees them all together; the
        // handler calls in flight are bounded by the joiner (concurrency), each partition's batches
        // still come one after the other. Partitions beyond the count known now are handled too, in
        // later turns.
        partitionsConsumedConcurrently: Math.max(1, Math.floor(concurrency), await partitionCount(topic)),
        // eslint-disable-next-line @typescript-eslint/unbound-method -- kafkajs hands closures over its batch, not methods
        eachBatch: async ({ batch, resolveOffset, heartbeat, commitOffsetsIfNecessary, uncommittedOffsets, isRunning, isStale }) => {
          let beatAt = performance.now();
          // Slices of whole records of at most maxBatch messages (a packed record counts its messages;
          // one that packs more than maxBatch goes alone).
          const unpacked = batch.messages.map((record) => unpackRecord(toLogMessage(record)));
          // The partition holds more than this fetch brought: a backlog, read at full speed.
          const backlog = Number(batch.lastOffset()) + 1 < Number(batch.highWatermark);
          for (let start = 0; start < batch.messages.length;) {
            if (!isRunning() || isStale()) return;
            const messages: LogMessage[] = [...unpacked[start]!];
            let end = start + 1;
            while (end < batch.messages.length && messages.length + unpacked[end]!.length <= maxBatch) messages.push(...unpacked[end++]!);
            const slice = batch.messages.slice(start, end);
            start = end;
            const last = slice[slice.length - 1]!.offset;
            await joined({
              messages,
              redelivered: handed.handOver(batch.partition, slice[0]!.offset, last, batch.highWatermark),
              heartbeat,
              stopping: () => !isRunning() || isStale(),
              more: backlog || end < batch.messages.length,
              // Durable now: only after the handler succeeded is the offset resolved (and committed by the joiner).
              resolve: () => resolveOffset(last),
              // Explicit offsets: with autoCommit off (and no interval or threshold) the bare call never commits.
              commit: () => commitOffsetsIfNecessary(uncommittedOffsets()),
            });
            await heartbeat();
          }
          // A short batch wait, or calls spaced by minIntervalMs: after a batch that did not fill
          // maxBatch, the partition's next fetch waits maxWaitMs, or until the next call may start,
          // and what was published meanwhile comes as one batch, handed over at once. After a full
          // batch, or with a backlog, it fetches at once (a backlog is read at full speed). The wait
          // heartbeats (kafkajs does so only between batches) and ends when the consumer stops.
          if (!brokerHold && (maxWaitMs > 0 || minIntervalMs > 0) && !backlog && unpackedCount(unpacked) < maxBatch) {
            const until = performance.now() + Math.max(maxWaitMs, joined.nextPartialAt() - performance.now());
            while (isRunning() && !isStale() && performance.now() < until) {
              await sleep(Math.min(until - performance.now(), HOLD_CHECK_MS));
              if (performance.now() - beatAt >= HEARTBEAT_INTERVAL_MS) {
                beatAt = performance.now();
                await heartbeat();
              }
            }
          }
        },
      });
      // The lag metric is sampled every 10 s (and on each health probe).
      const sampler = setInterval(() => void sampleLag(tracker.status), 10_000);
      sampler.unref();
      const handle: Consumer = {
        async stop() {
          clearInterval(sampler);
          tracker.status.running = false;
          consumers.delete(handle);
          await consumer.disconnect();
        },
      };
      consumers.set(handle, tracker.status);
      return handle;
    },
    async peek({ topic, groupId, limit, from }) {
      await ensureTopics();
      const positions = await positionsOf(topic, options.topicPrefix + groupId);
      const starts = new Map(positions.map(({ partition, committed }) => [partition, Math.max(committed, from?.[partition] ?? committed)]));
      const ends = new Map(positions.map(({ partition, end }) => [partition, end]));
      // A group of its own, never committed and deleted after: the inspected group is neither joined nor moved.
      const peekGroup = `${options.topicPrefix}${groupId}.peek.${randomUUID()}`;
      const { read, consumer } = await readPartitions(topic, peekGroup, starts, ends, limit);
      if (consumer) {
        await consumer.disconnect();
        // The broker forgets an empty group that never committed on its own (offsets retention): deleting it is tidiness only.
        await getAdmin()
          .then((client) => client.deleteGroups([peekGroup]))
          .catch((error: unknown) => log.warn({ err: error, group: peekGroup }, 'could not delete the group of a peek; the broker expires it'));
      }
      const page = mergePartitions(read, limit, Object.fromEntries(starts));
      return {
        messages: page.messages,
        next: page.next,
        more: positions.some(({ partition, end }) => page.next[partition]! < end),
        pending: positions.reduce((sum, { committed, end }) => sum + Math.max(0, end - committed), 0),
      };
    },
    async take({ topic, groupId, limit }, handler) {
      return takeInOrder(`${topic}\u0000${groupId}`, async () => {
        await ensureTopics();
        const fullGroup = options.topicPrefix + groupId;
        const positions = await positionsOf(topic, fullGroup);
        const starts = new Map(positions.map(({ partition, committed }) => [partition, committed]));
        // A member of the group itself for the time of the take: its commit is the group's.
        const { read, consumer } = await readPartitions(topic, fullGroup, starts, new Map(positions.map(({ partition, end }) => [partition, end])), limit);
        if (!consumer) return [];
        try {
          const page = mergePartitions(read, limit, Object.fromEntries(starts));
          const moved = (await positionsOf(topic, fullGroup)).filter(({ partition, committed }) => committed !== starts.get(partition));
          if (moved.length > 0) throw new Error(`group ${fullGroup} moved while its messages were read (another take); nothing taken, try again`);
          await handler(page.messages);
          const commits = Object.entries(page.next)
            .filter(([partition, offset]) => offset > starts.get(Number(partition))!)
            .map(([partition, offset]) => ({ topic: name(topic), partition: Number(partition), offset: String(offset) }));
          await consumer.commitOffsets(commits);
          // kafkajs skips a commit silently when its runner is not running: what the broker holds says whether it happened.
          const after = new Map((await positionsOf(topic, fullGroup)).map(({ partition, committed }) => [partition, committed]));
          const missed = commits.filter(({ partition, offset }) => (after.get(partition) ?? -1) < Number(offset));
          if (missed.length > 0)
            throw new Error(
              `group ${fullGroup} could not commit partitions ${missed.map(({ partition }) => partition).join(', ')}: their messages will be taken again`,
            );
          return page.messages;
        } finally {
          await consumer.disconnect();
        }
      });
    },
    async positions(topic, groupId): Promise<GroupPosition[]> {
      await ensureTopics();
      return (await positionsOf(topic, options.topicPrefix + groupId)).map(({ partition, committed, end }) => ({ partition, committed, end }));
    },
    async remove({ topic, groupId }, match) {
      return takeInOrder(`${topic}\u0000${groupId}`, async () => {
        await ensureTopics();
        const fullGroup = options.topicPrefix + groupId;
        const positions = await positionsOf(topic, fullGroup);
        const read = await readAll(
          topic,
          groupId,
          new Map(positions.map(({ partition, low }) => [partition, low])),
          new Map(positions.map(({ partition, end }) => [partition, end])),
        );
        /** Per partition holding a match: where it ended when read, and the pending messages kept. */
        const rewrites: { partition: number; end: number; kept: StoredLogMessage[] }[] = [];
        let removed = 0;
        for (const { partition, committed, end } of positions) {
          const messages = read.get(partition) ?? [];
          const matching = messages.filter(match).length;
          if (matching === 0) continue;
          removed += matching;
          rewrites.push({ partition, end, kept: messages.filter((message) => message.offset >= committed && !match(message)) });
        }
        if (removed === 0) return 0;
        const client = await getAdmin();
        await whenGroupIdle(fullGroup, async () => {
          const now = await positionsOf(topic, fullGroup);
          const moved = now.filter(({ partition, committed }) => committed !== positions.find((known) => known.partition === partition)?.committed);
          if (moved.length > 0) throw new Error(`group ${fullGroup} moved while ${topic} was read (a take); nothing removed, try again`);
        });
        const producer = await getProducer();
        for (const { partition, kept } of rewrites) {
          // Each kept message keeps its time: peeks and takes merge the partitions by it (oldest first).
          const records = kept.map(({ key, value, headers, timestamp }) => ({
            partition,
            key,
            value,
            headers,
            ...(timestamp === null ? {} : { timestamp: String(Date.parse(timestamp)) }),
          }));
          for (let start = 0; start < records.length; start += SEND_CHUNK) {
            await producer.send({ topic: name(topic), compression: COMPRESSION, acks: -1, messages: records.slice(start, start + SEND_CHUNK) });
          }
        }
        await retried(() =>
          client.deleteTopicRecords({ topic: name(topic), partitions: rewrites.map(({ partition, end }) => ({ partition, offset: String(end) })) }),
        );
        // The pending messages kept begin where each partition ended when read (with what came meanwhile): the group starts there.
        await whenGroupIdle(fullGroup, () =>
          client.setOffsets({ groupId: fullGroup, topic: name(topic), partitions: rewrites.map(({ partition, end }) => ({ partition, offset: String(end) })) }),
        );
        return removed;
      });
    },
    async consumers() {
      return Promise.all([...consumers.values()].map(async (status) => ({ ...status, lag: await sampleLag(status) })));
    },
    async ping() {
      const client = await getAdmin();
      await client.describeCluster();
    },
    async close() {
      await Promise.all([...consumers.keys()].map((consumer) => consumer.stop()));
      await producer?.disconnect();
      await admin?.disconnect();
    },
  };
}
