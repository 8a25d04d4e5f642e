import type { Topic } from './topics.js';

/** One message of the message log: partitioned by key (the link id for visits), value is JSON text. */
export interface LogMessage {
  key: string;
  value: string;
  headers?: Record<string, string>;
}

/**
 * Consumes batches of one topic in a consumer group. The handler resolving means the batch is
 * durable: only then are offsets committed. A thrown error leaves the batch to be redelivered.
 */
export interface ConsumeOptions {
  groupId: string;
  topic: Topic;
  maxBatch?: number;
  /**
   * Longest wait for a batch to fill up to maxBatch once its first message is there (0: deliver
   * what is there at once). Kafka: from 500 ms up (and without minIntervalMs), the broker holds each
   * fetch up to this long for about a MiB; otherwise the partition's next fetch waits this long after a batch smaller than
   * maxBatch, and a message published to an idle topic is fetched at once (an empty fetch is held
   * 500 ms, so an idle consumer does not fetch every few milliseconds).
   */
  maxWaitMs?: number;
  /**
   * Least time from the start of one handler call to the start of the next when the next holds
   * fewer than maxBatch messages (0, the default: none). A partial batch that is ready sooner waits
   * (and grows meanwhile); a full one is handed over at once, so a backlog is read at full speed.
   * With it, how often a handler is called does not depend on how fast the one before finished
   * (the enricher's inserts: ENRICHER_INSERT_INTERVAL_MS). Kafka: after a partial batch the
   * partition's next fetch waits until the next call may start, so what is published meanwhile is
   * fetched then and handed over at once; a batch whose partition holds more (a backlog, or the rest
   * of a fetch) is not held. In-process: a partial batch is handed over only when none is in hand.
   */
  minIntervalMs?: number;
  /**
   * Batches handed to the handler at once (default 1). With more, the next batch is handed over
   * while earlier ones are still being handled (the handler orders its own steps); offsets are
   * still committed in order and only up to the oldest batch not yet handled, and a failure
   * redelivers from that batch. Kafka: a batch joins what several partitions' fetches brought
   * together (up to maxBatch messages: fewer, larger batches), its offsets committed only after
   * the handler succeeded and all of it redelivered after a failure; batches at once hold different
   * partitions (one partition's messages stay one batch after the other); in-process: consecutive
   * batches of the topic.
   */
  concurrency?: number;
  handler: (messages: LogMessage[], batch: BatchControl) => Promise<void>;
}

/** What a handler that waits long (for room downstream) needs from its consumer. */
export interface BatchControl {
  /**
   * Tells the group this consumer is alive (Kafka drops a member silent past its session timeout).
   * Kafka: throws when the group is rebalancing; let it propagate, the batch is redelivered.
   */
  heartbeat: () => Promise<void>;
  /**
   * True once the consumer is stopping (Kafka: or the batch was dropped by a seek, or the group
   * began a rebalance while the handler ran): give up, the batch is redelivered.
   */
  stopping(): boolean;
  /**
   * True when some of these messages may have been handed to a handler before (in this process or
   * in one that crashed): the first batches after a consumer starts or takes a partition over, and
   * batches redelivered after a failure. Such a batch may be composed differently from the first
   * time, so its deduplication token does not catch it: a handler that must store each message
   * once checks what is already stored (services/enricher), and only for these batches.
   */
  readonly redelivered: boolean;
}

/**
 * Header of a message an ingest node's forwarder sends again (shared/message-log/spool.ts): Kafka may
 * hold it already. A consumer treats a batch holding one as redelivered (batchRedelivered).
 */
export const REDELIVERED_HEADER = 'lt-redelivered';

/** Whether a batch may hold messages handed over before: flagged by its consumer, or holding a message a forwarder sent again. */
export function batchRedelivered(messages: LogMessage[], batch: Pick<BatchControl, 'redelivered'>): boolean {
  return batch.redelivered || messages.some((message) => message.headers?.[REDELIVERED_HEADER] === '1');
}

export interface Consumer {
  stop(): Promise<void>;
}

/** How a consumer of this process is doing, for the health probe and the lag metric. */
export interface ConsumerStatus {
  group: string;
  topic: Topic;
  running: boolean;
  /** Messages published and not yet committed by the group (null when the broker could not tell). */
  lag: number | null;
  last_batch_at: string | null;
  /** The last handler failure, cleared by the next success (the batch is redelivered meanwhile). */
  last_error: string | null;
}

/** Bookkeeping every implementation keeps per consumer. */
export function consumerBookkeeping(group: string, topic: Topic) {
  const status: ConsumerStatus = { group, topic, running: true, lag: null, last_batch_at: null, last_error: null };
  return {
    status,
    /** The handler, recording each batch's success or failure (a failure is rethrown: the batch is redelivered). */
    track(handler: ConsumeOptions['handler']): ConsumeOptions['handler'] {
      return async (messages, batch) => {
        try {
          await handler(messages, batch);
        } catch (error) {
          status.last_error = (error instanceof Error ? error.message : String(error)).slice(0, 300);
          throw error;
        }
        status.last_batch_at = new Date().toISOString();
        status.last_error = null;
      };
    },
  };
}

/** A message read back with its place in the log (inspection, replay). */
export interface StoredLogMessage extends LogMessage {
  partition: number;
  offset: number;
  /** When the log took it (Kafka: the record's timestamp, ISO 8601); null where the log keeps no time (the durable one-process log). */
  timestamp: string | null;
}

/** Per partition, the offset of the next message to read. */
export type LogPositions = Record<number, number>;

export interface PeekOptions {
  topic: Topic;
  /** The group whose uncommitted messages are read; its committed offsets are not moved. */
  groupId: string;
  /** Most messages returned. */
  limit: number;
  /**
   * Where to read from, per partition, instead of the group's committed offset (the `next` of an
   * earlier peek: the following page); a position before the committed offset counts as it.
   */
  from?: LogPositions;
}

/** Where a group stands on one partition of a topic. */
export interface GroupPosition {
  partition: number;
  /** The group's committed offset (the oldest message kept when it has none, or retention passed it). */
  committed: number;
  /** The offset the next message published gets (Kafka: the high watermark; here, counting publishes in flight). */
  end: number;
}

/** A page of messages a group has not committed. */
export interface Peeked {
  /** Oldest first: each partition's in offset order; Kafka's partitions merged by record time. */
  messages: StoredLogMessage[];
  /** Where the following page starts (a partition absent: at the group's committed offset). */
  next: LogPositions;
  /** Whether messages are left after `next`. */
  more: boolean;
  /** Messages the group has not committed, every partition (from its committed offset, not from `from`). */
  pending: number;
}

/** The message log: Kafka in production, a durable one-process log on LMDB with the same semantics embedded (lmdb.ts). */
export interface MessageLog {
  kind: 'lmdb' | 'kafka';
  publish(topic: Topic, messages: LogMessage[]): Promise<void>;
  consume(options: ConsumeOptions): Promise<Consumer>;
  /**
   * Reads messages of a topic a group has not committed yet, without committing and without joining
   * the group (Kafka: a short-lived consumer of a throw-away group, bounded in time).
   */
  peek(options: PeekOptions): Promise<Peeked>;
  /**
   * Hands the oldest messages the group has not committed (at most `limit`, in peek's order) to
   * `handler`, then commits the group past them; a handler that throws commits nothing. For a group
   * no consumer runs (replay tools): Kafka joins it with a short-lived member, bounded in time. Calls
   * of one process for one group run one after the other. Resolves with the messages taken.
   */
  take(options: { topic: Topic; groupId: string; limit: number }, handler: (messages: StoredLogMessage[]) => Promise<void>): Promise<StoredLogMessage[]>;
  /** Where `groupId` stands on each partition of `topic` (the erasure waits for the enricher's groups with it). */
  positions(topic: Topic, groupId: string): Promise<GroupPosition[]>;
  /**
   * Removes every message of `topic` that `match` picks, wherever it is (an erasure: dead letters), and
   * resolves with how many. `groupId` is the group whose committed position marks what is pending
   * (the dead letters' replay group): what it had not committed stays pending, what it had stays
   * passed. The durable one-process log deletes the matching messages in one transaction (their
   * offsets become gaps, as a compacted topic's). Kafka cannot delete one record: in each partition
   * holding a match, the pending messages that do not match are published again at its end, in their
   * order, everything before is deleted (`deleteTopicRecords`) and the group is set where they begin,
   * so the messages the group had passed there are gone too. Serialised with `take` of the same group
   * in this process; on Kafka, waits (bounded) while another process's member is in the group.
   */
  remove(options: { topic: Topic; groupId: string }, match: (message: StoredLogMessage) => boolean): Promise<number>;
  /** The consumers of this process, with their lag (visit_log_consumer_lag is set from the same figures). */
  consumers(): Promise<ConsumerStatus[]>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Runs calls with the same key one after the other (take's per-group order within a process). */
export function keyedQueue() {
  const tails = new Map<string, Promise<unknown>>();
  return <T>(key: string, run: () => Promise<T>): Promise<T> => {
    const previous = tails.get(key) ?? Promise.resolve();
    const result = previous.then(run, run);
    const tail = result.catch(() => undefined);
    tails.set(key, tail);
    void tail.then(() => {
      if (tails.get(key) === tail) tails.delete(key);
    });
    return result;
  };
}

/**
 * The first `limit` messages of several partitions, oldest first: a k-way merge by record time
 * (then partition), each partition's messages kept in offset order, so that a page is a prefix of
 * every partition and the next page starts right after it. Also where each partition's next page starts.
 */
export function mergePartitions(
  partitions: Map<number, StoredLogMessage[]>,
  limit: number,
  start: LogPositions,
): { messages: StoredLogMessage[]; next: LogPositions } {
  const heads = new Map<number, number>([...partitions.keys()].map((partition) => [partition, 0]));
  const messages: StoredLogMessage[] = [];
  const next: LogPositions = { ...start };
  const time = (message: StoredLogMessage) => (message.timestamp === null ? 0 : Date.parse(message.timestamp));
  while (messages.length < limit) {
    let best: StoredLogMessage | undefined;
    for (const [partition, at] of heads) {
      const candidate = partitions.get(partition)![at];
      if (candidate && (!best || time(candidate) < time(best) || (time(candidate) === time(best) && candidate.partition < best.partition))) best = candidate;
    }
    if (!best) break;
    messages.push(best);
    heads.set(best.partition, heads.get(best.partition)! + 1);
    next[best.partition] = best.offset + 1;
  }
  return { messages, next };
}

/** Thrown when the one-process log is full: the caller counts it, never drops silently. */
export class LogFullError extends Error {
  constructor(topic: string, capacity: number) {
    super(`message log topic ${topic} is full (${capacity} messages waiting)`);
    this.name = 'LogFullError';
  }
}
