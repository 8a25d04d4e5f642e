import { setTimeout as sleep } from 'node:timers/promises';
import type { Metrics } from '../metrics.js';
import type { Topic } from './topics.js';
import { consumerTracker, VisitLogFullError, type Consumer, type ConsumeOptions, type ConsumerStatus, type LogMessage, type VisitLog } from './visit-log.js';

interface TopicLog {
  /** Offset of messages[0]. */
  base: number;
  messages: LogMessage[];
  /** Committed offset of each consumer group. */
  groups: Map<string, number>;
  /**
   * Per consumer group, the end of the furthest batch handed to any of its consumers in this
   * process: a batch starting before it is a redelivery (BatchControl.redelivered), also for a
   * consumer started after one that stopped without committing.
   */
  handed: Map<string, number>;
  wake: Set<() => void>;
}

/** Unconsumed messages a topic of the in-process log holds by default. */
export const MEMORY_LOG_CAPACITY = 100_000;

/**
 * In-process visit log for the one-process mode. Like Kafka it keeps each topic as an offset-
 * addressed log with a committed offset per consumer group, so a failed batch is redelivered.
 * It is bounded: past `capacity` unconsumed messages, publish throws VisitLogFullError while a
 * consumer group lags, and the oldest messages of a topic nobody consumes give way (counted).
 */
export function createMemoryVisitLog(metrics: Metrics, capacity = MEMORY_LOG_CAPACITY, retryDelayMs = 500): VisitLog {
  const topics = new Map<Topic, TopicLog>();
  const consumers = new Set<{ stopped: boolean; done: Promise<void>; status: ConsumerStatus }>();
  /** Messages of a topic a group has not committed. */
  const lagOf = (log: TopicLog, group: string) => log.base + log.messages.length - (log.groups.get(group) ?? log.base);
  /** Sets the lag of every group of a topic (published minus committed). */
  const measureLag = (topic: Topic, log: TopicLog) => {
    for (const group of log.groups.keys()) metrics.consumerLag.set({ group, topic }, lagOf(log, group));
  };
  const topicLog = (topic: Topic) => {
    let log = topics.get(topic);
    if (!log) {
      log = { base: 0, messages: [], groups: new Map(), handed: new Map(), wake: new Set() };
      topics.set(topic, log);
    }
    return log;
  };
  const trim = (topic: Topic, log: TopicLog) => {
    if (log.groups.size === 0) return;
    const low = Math.min(...log.groups.values());
    if (low > log.base) {
      log.messages.splice(0, low - log.base);
      log.base = low;
    }
    metrics.visitLogBacklog.set({ topic }, log.messages.length);
  };
  return {
    kind: 'memory',
    async publish(topic, messages) {
      const log = topicLog(topic);
      const excess = log.messages.length + messages.length - capacity;
      if (excess > 0) {
        if (log.groups.size > 0 || messages.length > capacity) {
          // Consumers are behind: push back on the producer rather than lose what they have not read.
          metrics.visitLogDropped.inc({ topic, reason: 'full' }, messages.length);
          throw new VisitLogFullError(topic, capacity);
        }
        // Nobody consumes this topic in this process (the dead-letter topic, embedded): like Kafka's
        // retention, the oldest messages give way, counted rather than dropped silently. A tenth of
        // the capacity goes at once, so a busy topic does not shift the whole log on every publish.
        const dropped = Math.min(log.messages.length, excess + Math.floor(capacity / 10));
        log.messages.splice(0, dropped);
        log.base += dropped;
        metrics.visitLogDropped.inc({ topic, reason: 'retention' }, dropped);
      }
      log.messages.push(...messages);
      metrics.visitLogPublished.inc({ topic }, messages.length);
      metrics.visitLogBacklog.set({ topic }, log.messages.length);
      measureLag(topic, log);
      for (const wake of log.wake) wake();
    },
    async consume({ groupId, topic, handler: untracked, maxBatch = 500, maxWaitMs = 0, concurrency: asked = 1 }: ConsumeOptions): Promise<Consumer> {
      const concurrency = Math.max(1, Math.floor(asked));
      const log = topicLog(topic);
      // A new group starts at the oldest retained message, as Kafka's `earliest` reset does.
      if (!log.groups.has(groupId)) log.groups.set(groupId, log.base);
      const tracker = consumerTracker(groupId, topic);
      const handler = tracker.track(untracked);
      const state = { stopped: false, done: Promise.resolve(), status: tracker.status };
      const heartbeat = async () => undefined;
      const stopping = () => state.stopped;
      let wakeUp: (() => void) | undefined;
      /** Resolves on the next publish, or after `timeoutMs` when given (the listener is then removed). */
      const waitForMessages = (timeoutMs?: number) =>
        new Promise<void>((resolve) => {
          let timer: NodeJS.Timeout | undefined;
          wakeUp = () => {
            clearTimeout(timer);
            log.wake.delete(wakeUp!);
            resolve();
          };
          log.wake.add(wakeUp);
          if (timeoutMs !== undefined) timer = setTimeout(wakeUp, timeoutMs);
        });
      /** When the oldest waiting message of a partial batch was first seen. */
      let partialSince: number | undefined;
      /** Batches handed over and not yet committed, oldest first; `handled` says whether the handler succeeded. */
      const inFlight: { end: number; handled: Promise<boolean> }[] = [];
      /** A batch in flight failed: nothing more is handed over until the failed one is redelivered. */
      let failing = false;
      state.done = (async () => {
        /** Where the next batch to hand over starts (the committed offset when nothing is in flight). */
        let next = log.groups.get(groupId)!;
        while (!state.stopped || inFlight.length > 0) {
          if (!state.stopped && !failing && inFlight.length < concurrency) {
            const batch = log.messages.slice(next - log.base, next - log.base + maxBatch);
            // A partial batch waits for more (up to maxWaitMs) only when nothing else is being handled.
            const partial = batch.length < maxBatch && maxWaitMs > 0;
            if (batch.length > 0 && (!partial || inFlight.length === 0)) {
              const left = partial ? (partialSince ??= Date.now()) + maxWaitMs - Date.now() : 0;
              if (left <= 0) {
                partialSince = undefined;
                const handedUpTo = log.handed.get(groupId) ?? next;
                const control = { heartbeat, stopping, redelivered: next < handedUpTo };
                next += batch.length;
                log.handed.set(groupId, Math.max(handedUpTo, next));
                const handled = handler(batch, control).then(
                  () => true,
                  () => {
                    failing = true;
                    return false;
                  },
                );
                inFlight.push({ end: next, handled });
                continue;
              }
              if (inFlight.length === 0) {
                await waitForMessages(left);
                continue;
              }
            }
            if (inFlight.length === 0) {
              await waitForMessages();
              continue;
            }
          }
          // Commit in order: the oldest batch first, whichever finishes first.
          const oldest = inFlight[0]!;
          if (await oldest.handled) {
            inFlight.shift();
            log.groups.set(groupId, oldest.end);
            trim(topic, log);
            measureLag(topic, log);
            // Before handing over another batch, let a failure of those still in flight that has
            // already happened be known (its promise settles in the microtasks run before this).
            if (inFlight.length > 0) await new Promise<void>((resolve) => setImmediate(resolve));
            continue;
          }
          // Not committed: once the batches after it are done too, it is redelivered (with them) after a pause, as Kafka would.
          await Promise.all(inFlight.map((entry) => entry.handled));
          inFlight.length = 0;
          failing = false;
          next = log.groups.get(groupId)!;
          await sleep(retryDelayMs);
        }
      })();
      consumers.add(state);
      return {
        async stop() {
          state.stopped = true;
          tracker.status.running = false;
          wakeUp?.();
          await state.done;
          consumers.delete(state);
        },
      };
    },
    async consumers() {
      return [...consumers].map(({ status }) => {
        const log = topicLog(status.topic);
        return { ...status, lag: lagOf(log, status.group) };
      });
    },
    async ping() {},
    async close() {
      for (const state of consumers) state.stopped = true;
      for (const log of topics.values()) for (const wake of log.wake) wake();
      await Promise.all([...consumers].map((state) => state.done));
    },
  };
}
