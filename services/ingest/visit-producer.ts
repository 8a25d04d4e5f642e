import { setTimeout as sleep } from 'node:timers/promises';
import type { Context } from '#shared/context.js';
import { counterChildren, onCollect } from '#shared/metrics.js';
import type { BeaconMessage } from '#shared/tracker/beacon.js';
import type { RawVisit } from '#shared/visits/raw-visit.js';
import { TOPICS, type Topic } from '#shared/message-log/topics.js';
import type { LogMessage } from '#shared/message-log/message-log.js';
import { SpoolFullError } from '#shared/message-log/spool.js';
import { openJournal, type Journal } from './journal.js';

/**
 * Visits per publish call; one call is in flight at a time. On Kafka a send is acknowledged within
 * milliseconds and 1 000 visits (about 400 KB) stay under the broker's message size limit. The
 * durable one-process log acknowledges a call at its next group commit (VISIT_LOG_COMMIT_MS, 50 ms):
 * 1 000 a call capped the edge at 20 000 visits/s, and the buffer overflowed at 31 000 redirects/s
 * with the log far from full. It takes what is buffered, up to 10 000 a call (a 200 000/s cap); so
 * does an ingest node's spool (the same log, forwarded to Kafka in calls of 1 000).
 */
const MAX_BATCH = { kafka: 1_000, lmdb: 10_000, spool: 10_000 } as const;
/** Longest pause between two retries while the message log is unreachable. */
const MAX_BACKOFF_MS = 5_000;

export interface LogProducer<T> {
  /**
   * Takes a message for the message log and returns at once: the answer to the visitor never waits
   * for the broker. False when the buffer is full (the message is counted as dropped).
   */
  enqueue(item: T): boolean;
  /** Visits waiting. */
  buffered(): number;
  /**
   * Resolves true once every item enqueued before the call is in the log or counted as dropped (a
   * backup's checkpoint: what was answered before it began), false at `deadlineMs` (epoch ms).
   */
  settled(deadlineMs: number): Promise<boolean>;
  /** Publishes what is buffered (until `deadlineMs`), then stops. */
  close(deadlineMs?: number): Promise<void>;
}

/** What the edge's producers use: the log they publish to (the spool when there is one), its buffer settings, the metrics and logger. */
export type LogProducerDeps = Pick<Context, 'messageLog' | 'spool' | 'config' | 'metrics' | 'log'>;

export type VisitProducer = LogProducer<RawVisit>;
export type BeaconProducer = LogProducer<BeaconMessage>;

/** Visits for `visits.raw`, keyed by link id (the subdomain for visits of no link). */
export const createVisitProducer = (context: LogProducerDeps): VisitProducer =>
  createLogProducer(
    context,
    TOPICS.visitsRaw,
    (visit) => visit.link_id || visit.subdomain,
    (visit) => visit.kind,
  );

/** Beacon messages for `tracker.raw`, keyed by visit id (a visit's messages stay in order). */
export const createBeaconProducer = (context: LogProducerDeps): BeaconProducer =>
  createLogProducer(
    context,
    TOPICS.trackerRaw,
    (message) => message.visit_id,
    (message) => `beacon_${message.type}`,
  );

/**
 * The edge side of the message log: visits are buffered in memory (VISIT_BUFFER_SIZE) and published
 * in batches by one loop, keyed by link id, to the process's spool when it has one (with Kafka: the
 * spool forwards them) or else to the message log. While the log refuses them (the in-process log
 * full because the enricher lags, its disk under DISK_MIN_FREE_MB) the loop retries with backoff and
 * the buffer holds; past its size, visits are counted in visits_dropped_total{reason="buffer_full"},
 * never dropped silently. A spool past its disk budget drops the batch at once, counted with
 * reason="spool_full" (Kafka is away for long: holding them in memory would only move the loss).
 */
function createLogProducer<T>(context: LogProducerDeps, topic: Topic, keyOf: (item: T) => string, kindOf: (item: T) => string): LogProducer<T> {
  const { metrics, log, config } = context;
  const messageLog = context.spool ?? context.messageLog;
  let lastJournalError = 0;
  const journal = journalOf(context, topic, (error) => {
    // A full disk or a failed write: those visits are held in memory as without a journal, counted and logged.
    metrics.visitLogWriteErrors.inc({ operation: 'journal' });
    if (Date.now() - lastJournalError > 10_000) {
      lastJournalError = Date.now();
      log.error({ err: error }, 'the edge journal cannot write: visits are held in memory until the log commits them');
    }
  });
  /**
   * Without a journal, items are keyed and serialised when published, not when enqueued: the answer
   * to the visitor does not wait for it. With one, they are serialised when taken (the journal
   * writes that text) and buffered as messages.
   */
  const buffer: (T | LogMessage)[] = [];
  const messageOf = journal
    ? (entry: T | LogMessage) => entry as LogMessage
    : (entry: T | LogMessage) => ({ key: keyOf(entry as T), value: JSON.stringify(entry) });
  /** When each buffered item was taken (performance.now), for the publish delay histogram. */
  const takenAt: number[] = [];
  const delay = metrics.visitLogDelay.labels({ topic });
  let running: Promise<void> | undefined;
  let closing = false;
  /** Items ever enqueued: those no longer in the buffer (enqueued - buffer.length) were published or dropped. */
  let enqueued = 0;
  /** Takes the first `count` items out of the buffer (published or dropped). */
  const taken = (count: number) => {
    buffer.splice(0, count);
    takenAt.splice(0, count);
  };
  let lastDropLog = 0;
  // Every redirect passes here: the count is handed to prom-client when read, the gauge read then.
  onCollect(metrics.visitsBuffered, () => closing || metrics.visitsBuffered.set({ topic }, buffer.length));
  const accepted = counterChildren(metrics.visitsAccepted, 'kind');
  if (journal && journal.recovered.length > 0) {
    // What a killed run had taken: published again first (flagged: the log may hold some of them).
    const now = performance.now();
    for (const message of journal.recovered) {
      buffer.push(message);
      takenAt.push(now);
    }
    enqueued += journal.recovered.length;
    log.warn({ topic, messages: journal.recovered.length }, 'journal of a previous run found: its messages are published again, flagged redelivered');
  }

  const drain = async () => {
    let backoff = 50;
    // Serialised once and retried as is while the log is unreachable (the buffer only grows at its end).
    let batch: LogMessage[] | undefined;
    /** Deletes the journal files whose messages the batch holds (a batch taking the whole buffer starts a new file). */
    let release: (() => void) | undefined;
    while (buffer.length > 0 && !closing) {
      if (!batch) {
        batch = buffer.slice(0, MAX_BATCH[messageLog.kind]).map(messageOf);
        if (journal && batch.length === buffer.length) release = journal.rotate();
      }
      const sent = batch;
      try {
        await messageLog.publish(topic, sent);
        delay.observe((performance.now() - takenAt[0]!) / 1000);
        taken(sent.length);
        batch = undefined;
        release?.();
        release = undefined;
        backoff = 50;
      } catch (error) {
        if (closing) return;
        if (error instanceof SpoolFullError) {
          metrics.visitsDropped.inc({ reason: 'spool_full', topic }, sent.length);
          if (Date.now() - lastDropLog > 10_000) {
            lastDropLog = Date.now();
            log.error({ dropped: sent.length }, `${error.message} (counted in visits_dropped_total)`);
          }
          taken(sent.length);
          batch = undefined;
          release?.();
          release = undefined;
          continue;
        }
        log.warn({ err: error, buffered: buffer.length, retry_ms: backoff }, 'message log unreachable; visits stay buffered');
        await sleep(backoff);
        backoff = Math.min(MAX_BACKOFF_MS, backoff * 2);
      }
    }
  };
  const kick = () => {
    if (running) return;
    running = (async () => {
      // Let the visits of the current tick join the batch.
      await new Promise<void>((resolve) => setImmediate(resolve));
      try {
        await drain();
      } finally {
        running = undefined;
        if (buffer.length > 0 && !closing) kick();
      }
    })();
    running.catch(() => undefined);
  };
  if (buffer.length > 0) kick();

  return {
    enqueue(item) {
      if (buffer.length >= config.visitBufferSize) {
        metrics.visitsDropped.inc({ reason: 'buffer_full', topic });
        if (Date.now() - lastDropLog > 10_000) {
          lastDropLog = Date.now();
          log.error({ buffered: buffer.length }, 'visit buffer full: visits are being dropped (counted in visits_dropped_total)');
        }
        return false;
      }
      if (journal) {
        const message = { key: keyOf(item), value: JSON.stringify(item) };
        // In the kernel before this event-loop iteration ends (journal.ts): a kill -9 after it loses nothing.
        journal.append(message);
        buffer.push(message);
      } else buffer.push(item);
      takenAt.push(performance.now());
      enqueued++;
      accepted(kindOf(item)).inc();
      kick();
      return true;
    },
    buffered: () => buffer.length,
    async settled(deadlineMs) {
      const target = enqueued;
      while (enqueued - buffer.length < target) {
        if (Date.now() >= deadlineMs) return false;
        await sleep(5);
      }
      return true;
    },
    async close(deadlineMs = 5_000) {
      const deadline = Date.now() + deadlineMs;
      while (buffer.length > 0 && Date.now() < deadline) {
        if (!running) kick();
        await sleep(Math.max(1, Math.min(20, deadline - Date.now())));
      }
      closing = true;
      if (buffer.length > 0) {
        metrics.visitsDropped.inc({ reason: 'shutdown', topic }, buffer.length);
        log.error({ lost: buffer.length }, 'visits still buffered at shutdown (counted in visits_dropped_total)');
        buffer.length = 0;
        takenAt.length = 0;
      }
      metrics.visitsBuffered.set({ topic }, 0);
      // Everything it held is in the log, or counted as dropped.
      journal?.close();
    },
  };
}

/**
 * The journal of a producer (VISIT_JOURNAL): in the folder of the durable log it publishes to — the
 * spool's with Kafka, the one-process log's without — which the process owns. None when the log is
 * not durable on this node (a process of the api role alone never takes visits).
 */
function journalOf({ config, spool, messageLog }: LogProducerDeps, topic: Topic, failed: (error: unknown) => void): Journal | undefined {
  if (!config.visitJournal) return undefined;
  const dir = spool ? config.spool.dir : messageLog.kind === 'lmdb' && config.messageLog.kind === 'lmdb' ? config.messageLog.dir : undefined;
  return dir ? openJournal(dir, topic, failed) : undefined;
}
