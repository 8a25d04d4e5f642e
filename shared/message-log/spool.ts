import { statfsSync } from 'node:fs';
import { Counter, Gauge } from 'prom-client';
import type { Logger } from '../logger.js';
import { onCollect, type Metrics } from '../metrics.js';
import { createDurableLog } from './lmdb.js';
import { REDELIVERED_HEADER, type Consumer, type LogMessage, type MessageLog } from './message-log.js';
import { TOPICS, type Topic } from './topics.js';

/** Disk budget of an ingest node's spool by default (VISIT_SPOOL_MAX_BYTES): 1 GiB, about 2.5 million visits. */
export const SPOOL_MAX_BYTES = 1_073_741_824;
/** The spool's consumer group: the forwarder of each topic. */
export const FORWARDER_GROUP = 'forwarder';
/** Messages per forwarded batch: one Kafka publish (under the broker's message size limit, as the edge's own batches were). */
const FORWARD_BATCH = 1_000;
/** How old the oldest spooled message may get before health says `degraded` (the forwarder is behind). */
export const SPOOL_BEHIND_SECONDS = 10;
/** What a message costs the budget besides its key and value (the segment's framing, LMDB's page overhead). */
const MESSAGE_OVERHEAD_BYTES = 16;
/** The topics an ingest node spools: its visits and the tracker's beacons. */
export const SPOOLED_TOPICS = [TOPICS.visitsRaw, TOPICS.trackerRaw] as const satisfies readonly Topic[];

export interface SpoolOptions {
  /** Folder of the spool's LMDB environment (DATA_DIR/spool). One process at a time owns it. */
  dir: string;
  /** Disk budget (VISIT_SPOOL_MAX_BYTES): past it, publish throws SpoolFullError. */
  maxBytes: number;
  commitDelayMs?: number;
  /** Free space kept on the disk (DISK_MIN_FREE_MB), as the durable log keeps it. */
  minFreeBytes?: number;
  /** Pause before a batch Kafka refused is forwarded again. */
  retryDelayMs?: number;
}

/** Where a spooled topic stands (health's `spool`, the visit_spool_* gauges). */
export interface SpoolStatus {
  topic: Topic;
  /** Messages on the spool that Kafka has not acknowledged yet. */
  messages: number;
  bytes: number;
  /** Age of the oldest of them (0 when none); for messages found at start, counted from when the spool was opened (at least). */
  oldest_age_s: number;
  /** The forwarder's last failure (Kafka refused or unreachable), cleared by the next batch it forwards. */
  last_error: string | null;
}

/** Thrown by publish when the spool's disk budget is used up: the caller counts the messages dropped. */
export class SpoolFullError extends Error {
  constructor(topic: string, maxBytes: number) {
    super(`the spool of ${topic} holds its budget of ${maxBytes} bytes (VISIT_SPOOL_MAX_BYTES): messages are dropped until Kafka takes them`);
    this.name = 'SpoolFullError';
  }
}

/** An ingest node's store-and-forward spool (createSpool). */
export interface Spool {
  kind: 'spool';
  /** Writes messages to the spool; resolves once they are on it (the durable log's group commit). Throws SpoolFullError past the budget. */
  publish(topic: Topic, messages: LogMessage[]): Promise<void>;
  status(): SpoolStatus[];
  /** Waits until Kafka holds everything spooled, until `deadline` (a timestamp); true if it does. */
  drain(deadline: number): Promise<boolean>;
  /** Stops the forwarders (the batch in hand finishes or is given up) and closes the spool; what it holds is forwarded at the next start. */
  close(): Promise<void>;
}

/** A message's cost to the budget. */
const sizeOf = (message: LogMessage) => message.key.length + message.value.length + MESSAGE_OVERHEAD_BYTES;

/**
 * The store-and-forward spool of an ingest node on the production path: every visit and beacon is
 * written first to a durable log of its own (createDurableLog, the one-process mode's log, under
 * DATA_DIR/spool), and a forwarder per topic — one consumer group of that log, in order — publishes
 * them to `target` (Kafka) and commits its local offset only once Kafka acknowledged them. A Kafka
 * outage fills the disk instead of memory, up to `maxBytes`; a restarted node forwards what its
 * spool still holds. A batch the forwarder may have sent before (the local commit lost to a crash,
 * or a send that failed after some partitions took it) is sent again with the header
 * REDELIVERED_HEADER, so that the enricher checks what it already stored.
 */
export async function createSpool(options: SpoolOptions, target: MessageLog, log: Logger, metrics: Metrics): Promise<Spool> {
  // The spool's own log counts its publishes, backlog and lag apart: visit_log_* are the Kafka log's figures.
  const own = { registers: [] };
  const spoolLog = createDurableLog(
    {
      dir: options.dir,
      capacity: Number.MAX_SAFE_INTEGER,
      commitDelayMs: options.commitDelayMs,
      minFreeBytes: options.minFreeBytes,
      retryDelayMs: options.retryDelayMs ?? 1_000,
    },
    log,
    {
      ...metrics,
      visitLogPublished: new Counter({ name: 'spool_published', help: '-', labelNames: ['topic'], ...own }),
      visitLogBacklog: new Gauge({ name: 'spool_backlog', help: '-', labelNames: ['topic'], ...own }),
      consumerLag: new Gauge({ name: 'spool_lag', help: '-', labelNames: ['group', 'topic'], ...own }),
    },
  );
  warnIfDiskSmall(options, log);

  /** Per topic: what Kafka has not acknowledged, as runs of one publish each (count, bytes, when), oldest first. */
  const pending = new Map<Topic, { runs: { count: number; bytes: number; at: number }[]; messages: number; bytes: number; lastError: string | null }>();
  const openedAt = Date.now();
  for (const topic of SPOOLED_TOPICS) {
    const entry = { runs: [] as { count: number; bytes: number; at: number }[], messages: 0, bytes: 0, lastError: null as string | null };
    // What a previous run left: counted once at start (its age is unknown: counted from now).
    let from: Record<number, number> | undefined;
    for (;;) {
      const page = await spoolLog.peek({ topic, groupId: FORWARDER_GROUP, limit: 10_000, from });
      for (const message of page.messages) entry.bytes += sizeOf(message);
      entry.messages += page.messages.length;
      if (!page.more || page.messages.length === 0) break;
      from = page.next;
    }
    if (entry.messages > 0) {
      entry.runs.push({ count: entry.messages, bytes: entry.bytes, at: openedAt });
      log.info({ topic, messages: entry.messages, bytes: entry.bytes }, 'spool holds messages from before the start: forwarding them to Kafka');
    }
    pending.set(topic, entry);
  }
  /** Kafka acknowledged the oldest `count` messages of the topic. */
  const forwarded = (topic: Topic, count: number) => {
    const entry = pending.get(topic)!;
    entry.messages -= count;
    while (count > 0 && entry.runs.length > 0) {
      const run = entry.runs[0]!;
      const taken = Math.min(count, run.count);
      const bytes = taken === run.count ? run.bytes : Math.round((run.bytes * taken) / run.count);
      run.count -= taken;
      run.bytes -= bytes;
      entry.bytes -= bytes;
      count -= taken;
      if (run.count === 0) entry.runs.shift();
    }
    if (entry.runs.length === 0) entry.bytes = 0;
  };

  const status = (): SpoolStatus[] =>
    SPOOLED_TOPICS.map((topic) => {
      const entry = pending.get(topic)!;
      const oldest = entry.runs[0];
      return {
        topic,
        messages: entry.messages,
        bytes: entry.bytes,
        oldest_age_s: oldest ? Math.round((Date.now() - oldest.at) / 100) / 10 : 0,
        last_error: entry.lastError,
      };
    });
  const gauges = [metrics.visitSpoolMessages, metrics.visitSpoolBytes, metrics.visitSpoolOldestAge] as const;
  let closed = false;
  // One reading of the spool serves the three gauges of a scrape.
  onCollect(metrics.visitSpoolMessages, () => {
    if (closed) return;
    for (const { topic, messages, bytes, oldest_age_s } of status()) {
      gauges[0].set({ topic }, messages);
      gauges[1].set({ topic }, bytes);
      gauges[2].set({ topic }, oldest_age_s);
    }
  });

  const consumers: Consumer[] = [];
  for (const topic of SPOOLED_TOPICS) {
    consumers.push(
      await spoolLog.consume({
        groupId: FORWARDER_GROUP,
        topic,
        maxBatch: FORWARD_BATCH,
        handler: async (messages, { redelivered }) => {
          const entry = pending.get(topic)!;
          try {
            await target.publish(
              topic,
              redelivered ? messages.map((message) => ({ ...message, headers: { ...message.headers, [REDELIVERED_HEADER]: '1' } })) : messages,
            );
          } catch (error) {
            // Retried by the spool's consumer (from this batch, flagged redelivered: some partitions may have taken it).
            if (entry.lastError === null)
              log.warn({ err: error, topic, spooled: entry.messages }, 'Kafka refused the forwarded batch: visits stay on the spool');
            entry.lastError = (error instanceof Error ? error.message : String(error)).slice(0, 300);
            throw error;
          }
          if (entry.lastError !== null) log.info({ topic, spooled: entry.messages }, 'Kafka takes forwarded batches again');
          entry.lastError = null;
          forwarded(topic, messages.length);
        },
      }),
    );
  }

  return {
    kind: 'spool',
    async publish(topic, messages) {
      const entry = pending.get(topic);
      if (!entry) return target.publish(topic, messages);
      let bytes = 0;
      for (const message of messages) bytes += sizeOf(message);
      if (entry.bytes + bytes > options.maxBytes) throw new SpoolFullError(topic, options.maxBytes);
      // Counted before the write: a batch being written counts against the budget too.
      const run = { count: messages.length, bytes, at: Date.now() };
      entry.runs.push(run);
      entry.messages += run.count;
      entry.bytes += bytes;
      try {
        await spoolLog.publish(topic, messages);
      } catch (error) {
        // Nothing published after it can have been forwarded before it: it is the newest run, or a gap.
        const at = entry.runs.indexOf(run);
        if (at >= 0) entry.runs.splice(at, 1);
        entry.messages -= run.count;
        entry.bytes -= run.bytes;
        throw error;
      }
    },
    status,
    async drain(deadline) {
      const left = () => status().reduce((sum, topic) => sum + topic.messages, 0);
      while (left() > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      return left() === 0;
    },
    async close() {
      if (closed) return;
      closed = true;
      await Promise.all(consumers.map((consumer) => consumer.stop()));
      for (const gauge of gauges) gauge.reset();
      await spoolLog.close();
    },
  };
}

/** Says at start when the disk cannot hold the budget above the free space DISK_MIN_FREE_MB keeps (the disk guard then refuses first). */
function warnIfDiskSmall(options: SpoolOptions, log: Logger) {
  const stats = statfsSync(options.dir);
  const available = stats.bavail * stats.bsize - (options.minFreeBytes ?? 0);
  if (available < options.maxBytes) {
    log.warn(
      { dir: options.dir, budget_bytes: options.maxBytes, available_bytes: Math.max(0, available) },
      'the spool disk has less room above DISK_MIN_FREE_MB than VISIT_SPOOL_MAX_BYTES: during a long Kafka outage the disk guard refuses visits before the budget is reached',
    );
  }
}
