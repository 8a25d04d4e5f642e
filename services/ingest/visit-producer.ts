import { setTimeout as sleep } from 'node:timers/promises';
import type { Context } from '../../shared/context.js';
import type { RawVisit } from '../../shared/visits/raw-visit.js';
import { TOPICS } from '../../shared/visit-log/topics.js';
import type { LogMessage } from '../../shared/visit-log/visit-log.js';

/** Visits per publish call. */
const MAX_BATCH = 1_000;
/** Longest pause between two retries while the visit log is unreachable. */
const MAX_BACKOFF_MS = 5_000;

export interface VisitProducer {
  /**
   * Takes a visit for the visit log and returns at once: the answer to the visitor never waits
   * for the broker. False when the buffer is full (the visit is counted as dropped).
   */
  enqueue(visit: RawVisit): boolean;
  /** Visits waiting. */
  buffered(): number;
  /** Publishes what is buffered (until `deadlineMs`), then stops. */
  close(deadlineMs?: number): Promise<void>;
}

/**
 * The edge side of the visit log: visits are buffered in memory (VISIT_BUFFER_SIZE) and published
 * in batches by one loop, keyed by link id. While the log is unreachable (Kafka down, or the
 * in-process log full because the enricher lags) the loop retries with backoff and the buffer
 * holds; past its size, visits are counted in visits_dropped_total{reason="buffer_full"}, never
 * dropped silently.
 */
export function createVisitProducer(context: Context): VisitProducer {
  const { metrics, log, visitLog, config } = context;
  const buffer: LogMessage[] = [];
  let running: Promise<void> | undefined;
  let closing = false;
  let lastDropLog = 0;

  const drain = async () => {
    let backoff = 50;
    while (buffer.length > 0 && !closing) {
      const batch = buffer.slice(0, MAX_BATCH);
      try {
        await visitLog.publish(TOPICS.visitsRaw, batch);
        buffer.splice(0, batch.length);
        metrics.visitsBuffered.set(buffer.length);
        backoff = 50;
      } catch (error) {
        if (closing) return;
        log.warn({ err: error, buffered: buffer.length, retry_ms: backoff }, 'visit log unreachable; visits stay buffered');
        await sleep(backoff);
        backoff = Math.min(MAX_BACKOFF_MS, backoff * 2);
      }
    }
  };
  const kick = () => {
    running ??= (async () => {
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

  return {
    enqueue(visit) {
      if (buffer.length >= config.visitBufferSize) {
        metrics.visitsDropped.inc({ reason: 'buffer_full' });
        if (Date.now() - lastDropLog > 10_000) {
          lastDropLog = Date.now();
          log.error({ buffered: buffer.length }, 'visit buffer full: visits are being dropped (counted in visits_dropped_total)');
        }
        return false;
      }
      buffer.push({ key: visit.link_id || visit.subdomain, value: JSON.stringify(visit) });
      metrics.visitsAccepted.inc({ kind: visit.kind });
      metrics.visitsBuffered.set(buffer.length);
      kick();
      return true;
    },
    buffered: () => buffer.length,
    async close(deadlineMs = 5_000) {
      const deadline = Date.now() + deadlineMs;
      while (buffer.length > 0 && Date.now() < deadline) {
        if (!running) kick();
        await sleep(Math.max(1, Math.min(20, deadline - Date.now())));
      }
      closing = true;
      if (buffer.length > 0) {
        metrics.visitsDropped.inc({ reason: 'shutdown' }, buffer.length);
        log.error({ lost: buffer.length }, 'visits still buffered at shutdown (counted in visits_dropped_total)');
        buffer.length = 0;
        metrics.visitsBuffered.set(0);
      }
    },
  };
}
