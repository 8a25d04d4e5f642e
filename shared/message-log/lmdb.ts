import { mkdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { open, type Database, type RootDatabase } from 'lmdb';
import { diskGuard } from '../disk-guard.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { TOPIC_NAMES, type Topic } from './topics.js';
import {
  consumerBookkeeping,
  keyedQueue,
  LogFullError,
  type Consumer,
  type ConsumeOptions,
  type ConsumerStatus,
  type GroupPosition,
  type LogMessage,
  type Peeked,
  type StoredLogMessage,
  type MessageLog,
} from './message-log.js';

/** Unconsumed messages a topic of the durable log holds by default (VISIT_LOG_CAPACITY). */
export const DURABLE_LOG_CAPACITY = 1_000_000;
/** Group commit by default (VISIT_LOG_COMMIT_MS): writes of this many milliseconds share one transaction. */
export const DURABLE_LOG_COMMIT_MS = 50;

export interface DurableLogOptions {
  /** Folder of the LMDB environment (DATA_DIR/log). One process at a time owns it. */
  dir: string;
  capacity?: number;
  commitDelayMs?: number;
  /** Pause before a failed batch is handed over again. */
  retryDelayMs?: number;
  /** Free space kept on the disk (DISK_MIN_FREE_MB): publishes are refused below it. */
  minFreeBytes?: number;
}

/**
 * A segment: the messages of one publish call, stored as one LMDB record under [topic, start, count].
 * Consumers read segments whole; a segment every consumer group has passed is deleted (LMDB reuses its pages).
 */
interface Segment {
  start: number;
  count: number;
}

/** One stored message: key, value and (only when there are any) headers. */
type StoredMessage = [string, string] | [string, string, Record<string, string>];

/**
 * A segment as stored: the messages as `key TAB value NEWLINE` text in one buffer when none has
 * headers, no key holds a tab or a newline and no value a newline (every visit and beacon: JSON text
 * holds neither), else one entry per message. The text costs one native encode and one decode per
 * segment where an entry per message cost msgpack a string write and read per message: about a
 * microsecond per visit on the redirect's core.
 */
type StoredSegment = Uint8Array | StoredMessage[];

/** The stored form of a segment's messages (StoredSegment). */
export function encodeSegment(messages: LogMessage[]): StoredSegment {
  const parts: string[] = [];
  for (const { key, value, headers } of messages) {
    if ((headers && Object.keys(headers).length > 0) || key.includes('\t') || key.includes('\n') || value.includes('\n')) {
      return messages.map((message): StoredMessage =>
        message.headers && Object.keys(message.headers).length > 0 ? [message.key, message.value, message.headers] : [message.key, message.value],
      );
    }
    parts.push(key, '\t', value, '\n');
  }
  return Buffer.from(parts.join(''));
}

/** The messages of a stored segment (encodeSegment), in order. */
export function decodeSegment(stored: StoredSegment): StoredMessage[] {
  if (!ArrayBuffer.isView(stored)) return stored;
  const text = Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength).toString('utf8');
  const messages: StoredMessage[] = [];
  let at = 0;
  while (at < text.length) {
    const tab = text.indexOf('\t', at);
    const end = text.indexOf('\n', tab);
    messages.push([text.slice(at, tab), text.slice(tab + 1, end)]);
    at = end + 1;
  }
  return messages;
}

interface TopicLog {
  /** Segments on disk or being written, oldest first. */
  segments: Segment[];
  /** The offset the next published message gets. */
  end: number;
  /** Messages below this offset are on disk: consumers see only those. */
  durable: number;
  /** Committed offset of each consumer group (every group the log has known). */
  groups: Map<string, number>;
  /** Consumers of this process per group. */
  active: Map<string, number>;
  /**
   * Per group, the end of what may have been handed to a handler: the watermark found on disk at
   * start (what a crashed process may have handed over), then raised by this process's consumers.
   */
  handed: Map<string, number>;
  /** Per group, the watermark on disk: nothing beyond it is handed over before it is raised. */
  reserved: Map<string, number>;
  wake: Set<() => void>;
}

/** How far ahead of the batches handed over a group's watermark is written (in batches). */
const RESERVE_BATCHES = 8;

/**
 * The message log of the one-process mode, durable on LMDB (through lmdb-js): Kafka's semantics —
 * topics as offset-addressed logs, a committed offset per consumer group, a failed batch
 * redelivered — and, unlike the in-memory log it replaces, nothing published is lost when the
 * process dies.
 *
 * Durability: a publish resolves once its messages are committed, and consumers see only committed
 * messages. Writes are group-committed: every write of a `commitDelayMs` window (50 ms by default)
 * shares one LMDB transaction; lmdb-js's overlapping sync flushes it to disk (fsync) right after its
 * commit, beside the next one. A committed transaction survives the process (kill -9, OOM: the
 * operating system holds its pages); the flush makes it survive a power cut, and LMDB's meta pages
 * keep the file consistent either way. A process killed at any point loses nothing a publish resolved for; what the
 * edge had answered but not yet handed to the log (its buffer of one window) is the window of loss.
 * Group offsets are committed after the handler succeeded, as on Kafka; a batch that may have been
 * handed over before a crash (below the group's watermark, written ahead of what is handed over) is
 * flagged `redelivered`, so the handler checks what is already stored.
 *
 * Bounded: past `capacity` unconsumed messages, publish throws LogFullError while a group lags
 * (the producer buffers, then counts drops); a topic nobody consumes (the dead-letter topic) gives
 * its oldest segments way, counted. A disk with less free space than `minFreeBytes` refuses the
 * publish (counted in visit_log_dropped_total{reason="disk_full"}: LMDB never meets the full disk);
 * a failed write rejects the publish and is counted in visit_log_write_errors_total. Both are logged
 * and make ping (the health probe) fail until a write succeeds.
 */
export function createDurableLog(options: DurableLogOptions, log: Logger, metrics: Metrics): MessageLog {
  const capacity = options.capacity ?? DURABLE_LOG_CAPACITY;
  const retryDelayMs = options.retryDelayMs ?? 500;
  mkdirSync(options.dir, { recursive: true });
  const disk = diskGuard(options.dir, options.minFreeBytes ?? 0);
  const env: RootDatabase = open({ path: options.dir, compression: false });
  /** [topic, start, count] → the segment's messages (StoredSegment) */
  const messagesDb: Database<StoredSegment, [string, number, number]> = env.openDB({ name: 'messages' });
  /** [topic, group] → committed offset; [topic, group, 'reserved'] → the group's watermark. */
  const groupsDb: Database<number, (string | number)[]> = env.openDB({ name: 'groups' });
  /** topic → the offset the topic starts at after retention removed segments (offsets never go back). */
  const floorsDb: Database<number, string> = env.openDB({ name: 'floors' });

  const topics = new Map<Topic, TopicLog>();
  for (const topic of TOPIC_NAMES)
    topics.set(topic, {
      segments: [],
      end: floorsDb.get(topic) ?? 0,
      durable: 0,
      groups: new Map(),
      active: new Map(),
      handed: new Map(),
      reserved: new Map(),
      wake: new Set(),
    });
  for (const { key } of messagesDb.getRange()) {
    const [topic, start, count] = key;
    const entry = topics.get(topic as Topic);
    if (!entry) continue;
    entry.segments.push({ start, count });
    entry.end = Math.max(entry.end, start + count);
  }
  for (const { key, value } of groupsDb.getRange()) {
    const entry = topics.get(key[0] as Topic);
    if (!entry) continue;
    if (key.length === 2) {
      entry.groups.set(String(key[1]), value);
      entry.end = Math.max(entry.end, value);
    } else {
      entry.reserved.set(String(key[1]), value);
      entry.handed.set(String(key[1]), value);
    }
  }
  for (const entry of topics.values()) entry.durable = entry.end;

  const consumers = new Set<{ stopped: boolean; done: Promise<void>; status: ConsumerStatus }>();
  let closed = false;
  /** The last write refused or failed, until a publish succeeds again (ping reports it). */
  let writeError: Error | undefined;
  let lastErrorLog = 0;
  /**
   * Group commit: writes wait for the next tick of `commitDelayMs` and are all started in that one
   * event turn, which lmdb-js commits as one transaction. (lmdb-js's own `commitDelay` applies only
   * without event-turn batching: with it, each turn that wrote committed at once, and the edge's
   * back-to-back publishes made about 2 000 transactions a second, each with its fsync, on the
   * redirect's core: a third of the edge's throughput.) A commit costs about 0.7 ms of CPU whatever
   * it holds, hence the 50 ms default (bench/run.sh redirect: 5 ms cost a saturated edge a fifth of
   * its redirects, 25 ms 8 %, 50 ms nothing measurable).
   */
  const commitDelayMs = options.commitDelayMs ?? DURABLE_LOG_COMMIT_MS;
  let queued: (() => void)[] = [];
  let tick: NodeJS.Timeout | undefined;
  const commitQueued = () => {
    tick = undefined;
    const starts = queued;
    queued = [];
    for (const start of starts) start();
  };
  /** Starts `write` at the next group commit; resolves when it is committed, counting and reporting a failure. */
  const wrote = <T>(write: () => Promise<T>, what: string): Promise<T> => {
    const written = new Promise<T>((resolve, reject) => {
      queued.push(() => {
        try {
          write().then(resolve, reject);
        } catch (error) {
          reject(error);
        }
      });
    });
    tick ??= setTimeout(commitQueued, commitDelayMs);
    return written.then(
      (value) => value,
      (error: unknown) => {
        metrics.visitLogWriteErrors.inc({ operation: what });
        const failure = error instanceof Error ? error : new Error(String(error));
        refused(failure, what);
        throw failure;
      },
    );
  };
  /** Remembers a write refused or failed (ping reports it until a write succeeds) and logs it, once per 10 s. */
  function refused(error: Error, what: string) {
    writeError = error;
    if (Date.now() - lastErrorLog > 10_000) {
      lastErrorLog = Date.now();
      log.error(
        { err: error, operation: what, dir: options.dir },
        'the durable message log cannot write: messages are refused (the edge buffers them, then counts drops)',
      );
    }
  }

  const topicLog = (topic: Topic) => topics.get(topic)!;
  /** The oldest offset some group still needs (not below the oldest stored one). */
  const lowWater = (entry: TopicLog) => {
    const oldest = entry.segments[0]?.start ?? entry.end;
    return entry.groups.size > 0 ? Math.max(oldest, Math.min(...entry.groups.values())) : oldest;
  };
  const lagOf = (entry: TopicLog, group: string) => entry.durable - (entry.groups.get(group) ?? 0);
  const measure = (topic: Topic, entry: TopicLog) => {
    metrics.visitLogBacklog.set({ topic }, entry.end - lowWater(entry));
    for (const group of entry.groups.keys()) metrics.consumerLag.set({ group, topic }, lagOf(entry, group));
  };
  /** Deletes the segments every group has passed (their pages are reused by later writes). */
  const reclaim = (topic: Topic, entry: TopicLog, below: number) => {
    let removed = 0;
    while (entry.segments.length > 0 && entry.segments[0]!.start + entry.segments[0]!.count <= below) {
      const { start, count } = entry.segments.shift()!;
      void wrote(() => messagesDb.remove([topic, start, count]), 'reclaim').catch(() => undefined);
      removed += count;
    }
    return removed;
  };

  /**
   * Reads the durable messages from `from` on, at most `max`, each made by `make` (a segment whose
   * write failed leaves a gap: skipped): the messages and the offset after the last. The segment
   * read last is kept decoded for the next call (a consumer reads a segment over several batches).
   */
  const reader = <M>(topic: Topic, make: (key: string, value: string, headers: Record<string, string> | undefined, offset: number) => M) => {
    // By the segment itself: an erasure replaces a segment by parts that may start where it started.
    let cached: { segment: Segment; messages: StoredMessage[] } | undefined;
    return (from: number, max: number): { messages: M[]; end: number } => {
      const entry = topicLog(topic);
      const out: M[] = [];
      let at = from;
      for (const segment of entry.segments) {
        if (out.length >= max) break;
        const segmentEnd = segment.start + segment.count;
        if (segmentEnd <= at) continue;
        if (segmentEnd > entry.durable) break;
        if (segment.start > at) at = segment.start;
        if (cached?.segment !== segment) {
          const stored = messagesDb.get([topic, segment.start, segment.count]);
          if (!stored) break;
          cached = { segment, messages: decodeSegment(stored) };
        }
        for (let index = at - segment.start; index < segment.count && out.length < max; index++, at++) {
          const [key, value, headers] = cached.messages[index]!;
          out.push(make(key, value, headers, at));
        }
      }
      return { messages: out, end: at };
    };
  };
  /** Messages as consumers get them. */
  const asLogMessage = (key: string, value: string, headers: Record<string, string> | undefined): LogMessage =>
    headers ? { key, value, headers } : { key, value };
  /** Messages as inspection gets them, with their offsets (the log keeps no time: `timestamp` null; partition 0, the one a topic has here). */
  const withOffset = (key: string, value: string, headers: Record<string, string> | undefined, offset: number): StoredLogMessage => ({
    key,
    value,
    ...(headers ? { headers } : {}),
    partition: 0,
    offset,
    timestamp: null,
  });

  /** Where a group stands: its committed offset, or the oldest stored message for a group the topic does not know (as consume starts it), never below what retention kept. */
  const committedOf = (entry: TopicLog, groupId: string) => Math.max(entry.groups.get(groupId) ?? 0, entry.segments[0]?.start ?? entry.end);
  /** Durable messages stored from offset `from` on (an erasure leaves gaps: offsets are not a count). */
  const storedFrom = (entry: TopicLog, from: number) => {
    let count = 0;
    for (const { start, count: size } of entry.segments) {
      if (start + size > entry.durable) break;
      count += Math.max(0, start + size - Math.max(start, from));
    }
    return count;
  };
  const peekPage = (topic: Topic, groupId: string, limit: number, from?: Record<number, number>): Peeked => {
    const entry = topicLog(topic);
    const committed = committedOf(entry, groupId);
    const start = Math.max(committed, from?.[0] ?? committed);
    const { messages } = reader(topic, withOffset)(start, limit);
    const next = messages.length > 0 ? messages.at(-1)!.offset + 1 : start;
    return { messages, next: { 0: next }, more: storedFrom(entry, next) > 0, pending: storedFrom(entry, committed) };
  };
  /**
   * Deletes the durable messages of a topic that `match` picks, in one transaction: a segment holding
   * one is replaced by the runs of messages it keeps, at their offsets (the others become gaps, which
   * readers skip). The count deleted.
   */
  const removeMatching = async (topic: Topic, match: (message: StoredLogMessage) => boolean): Promise<number> => {
    const entry = topicLog(topic);
    const rewrites: { segment: Segment; runs: { segment: Segment; stored: StoredSegment }[] }[] = [];
    let removed = 0;
    for (const segment of entry.segments) {
      if (segment.start + segment.count > entry.durable) break;
      const stored = messagesDb.get([topic, segment.start, segment.count]);
      if (!stored) continue;
      const messages = decodeSegment(stored);
      const kept = messages.map(([key, value, headers], index) => !match(withOffset(key, value, headers, segment.start + index)));
      if (kept.every(Boolean)) continue;
      const runs: { segment: Segment; stored: StoredSegment }[] = [];
      for (let index = 0; index < messages.length;) {
        if (!kept[index]) {
          removed++;
          index++;
          continue;
        }
        let end = index;
        while (end < messages.length && kept[end]) end++;
        const run = messages.slice(index, end).map(([key, value, headers]) => asLogMessage(key, value, headers));
        runs.push({ segment: { start: segment.start + index, count: end - index }, stored: encodeSegment(run) });
        index = end;
      }
      rewrites.push({ segment, runs });
    }
    if (removed === 0) return 0;
    // The topic's end is kept across a restart even when its last messages are the ones deleted (offsets never go back).
    const end = entry.end;
    await wrote(
      () =>
        env.transaction(() => {
          for (const { segment, runs } of rewrites) {
            void messagesDb.remove([topic, segment.start, segment.count]);
            for (const run of runs) void messagesDb.put([topic, run.segment.start, run.segment.count], run.stored);
          }
          void floorsDb.put(topic, Math.max(end, floorsDb.get(topic) ?? 0));
        }),
      'erase',
    );
    for (const { segment, runs } of rewrites) {
      const at = entry.segments.indexOf(segment);
      if (at >= 0) entry.segments.splice(at, 1, ...runs.map((run) => run.segment));
      // Reclaimed meanwhile (every group passed it): its parts go too.
      else for (const run of runs) void wrote(() => messagesDb.remove([topic, run.segment.start, run.segment.count]), 'erase').catch(() => undefined);
    }
    measure(topic, entry);
    return removed;
  };
  const takeInOrder = keyedQueue();

  return {
    kind: 'lmdb',
    async publish(topic, messages) {
      if (closed) throw new Error('the message log is closed');
      if (messages.length === 0) return;
      try {
        disk.check();
      } catch (error) {
        metrics.visitLogDropped.inc({ topic, reason: 'disk_full' }, messages.length);
        refused(error as Error, 'publish');
        throw error;
      }
      const entry = topicLog(topic);
      const excess = entry.end - lowWater(entry) + messages.length - capacity;
      if (excess > 0) {
        if (entry.active.size > 0 || messages.length > capacity) {
          metrics.visitLogDropped.inc({ topic, reason: 'full' }, messages.length);
          throw new LogFullError(topic, capacity);
        }
        // No consumer of this process reads the topic (the dead-letter topic, or a role switched off):
        // like Kafka's retention, its oldest segments give way, counted; a group that comes back
        // resumes at the oldest message kept.
        const removed = reclaim(topic, entry, (entry.segments[0]?.start ?? entry.end) + excess + Math.floor(capacity / 10));
        if (removed > 0) {
          metrics.visitLogDropped.inc({ topic, reason: 'retention' }, removed);
          void wrote(() => floorsDb.put(topic, entry.segments[0]?.start ?? entry.end), 'retention').catch(() => undefined);
        }
      }
      const segment: Segment = { start: entry.end, count: messages.length };
      entry.end += messages.length;
      entry.segments.push(segment);
      const stored = encodeSegment(messages);
      try {
        await wrote(() => messagesDb.put([topic, segment.start, segment.count], stored), 'publish');
      } catch (error) {
        const at = entry.segments.indexOf(segment);
        if (at >= 0) entry.segments.splice(at, 1);
        // Nothing published after it: its offsets are given again; else they stay a gap readers skip.
        if (entry.end === segment.start + segment.count) entry.end = segment.start;
        throw error;
      }
      writeError = undefined;
      // Commits happen in order: every segment before this one is on disk too.
      entry.durable = Math.max(entry.durable, segment.start + segment.count);
      metrics.visitLogPublished.inc({ topic }, messages.length);
      measure(topic, entry);
      for (const wake of entry.wake) wake();
    },
    async consume({
      groupId,
      topic,
      handler: untracked,
      maxBatch = 500,
      maxWaitMs = 0,
      minIntervalMs = 0,
      concurrency: asked = 1,
    }: ConsumeOptions): Promise<Consumer> {
      if (closed) throw new Error('the message log is closed');
      const concurrency = Math.max(1, Math.floor(asked));
      const entry = topicLog(topic);
      // A new group starts at the oldest stored message, as Kafka's `earliest` reset does.
      const oldest = entry.segments[0]?.start ?? entry.end;
      if (!entry.groups.has(groupId) || entry.groups.get(groupId)! < oldest) {
        entry.groups.set(groupId, oldest);
        await wrote(() => groupsDb.put([topic, groupId], oldest), 'commit');
      }
      entry.active.set(groupId, (entry.active.get(groupId) ?? 0) + 1);
      const read = reader(topic, asLogMessage);
      const tracker = consumerBookkeeping(groupId, topic);
      const handler = tracker.track(untracked);
      const state = { stopped: false, done: Promise.resolve(), status: tracker.status };
      const heartbeat = async () => undefined;
      const stopping = () => state.stopped;
      /**
       * Batches below what the group may have handed over (by any consumer of it in this process, or
       * in one that died) are flagged redelivered. The watermark is written ahead of what is handed
       * over, RESERVE_BATCHES batches at a time, so a crash never hands over more than it says.
       */
      const reserve = async (upTo: number) => {
        if (upTo <= (entry.reserved.get(groupId) ?? 0)) return;
        const reserved = upTo + RESERVE_BATCHES * maxBatch;
        await wrote(() => groupsDb.put([topic, groupId, 'reserved'], reserved), 'commit');
        entry.reserved.set(groupId, Math.max(reserved, entry.reserved.get(groupId) ?? 0));
      };
      let wakeUp: (() => void) | undefined;
      const waitForMessages = (timeoutMs?: number) =>
        new Promise<void>((resolve) => {
          let timer: NodeJS.Timeout | undefined;
          wakeUp = () => {
            clearTimeout(timer);
            entry.wake.delete(wakeUp!);
            resolve();
          };
          entry.wake.add(wakeUp);
          if (timeoutMs !== undefined) timer = setTimeout(wakeUp, timeoutMs);
        });
      let partialSince: number | undefined;
      // When the last batch was handed over: a partial one waits until minIntervalMs after it.
      let lastCall = -Infinity;
      const inFlight: { end: number; handled: Promise<boolean> }[] = [];
      let failing = false;
      state.done = (async () => {
        let next = entry.groups.get(groupId)!;
        while (!state.stopped || inFlight.length > 0) {
          if (!state.stopped && !failing && inFlight.length < concurrency) {
            const batch = read(next, maxBatch);
            const partial = batch.messages.length < maxBatch && (maxWaitMs > 0 || minIntervalMs > 0);
            if (batch.messages.length > 0 && (!partial || inFlight.length === 0)) {
              const left = partial ? Math.max((partialSince ??= Date.now()) + maxWaitMs, lastCall + minIntervalMs) - Date.now() : 0;
              if (left <= 0) {
                partialSince = undefined;
                try {
                  await reserve(batch.end);
                } catch {
                  // The watermark cannot be written (a full disk): nothing is handed over until it can.
                  await sleep(retryDelayMs);
                  continue;
                }
                lastCall = Date.now();
                const control = { heartbeat, stopping, redelivered: next < (entry.handed.get(groupId) ?? 0) };
                next = batch.end;
                entry.handed.set(groupId, Math.max(entry.handed.get(groupId) ?? 0, next));
                const handled = handler(batch.messages, control).then(
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
          const oldest = inFlight[0]!;
          if (await oldest.handled) {
            inFlight.shift();
            entry.groups.set(groupId, oldest.end);
            // Not awaited: a commit lost to a crash only redelivers the batch, flagged (below the watermark).
            void wrote(() => groupsDb.put([topic, groupId], oldest.end), 'commit').catch(() => undefined);
            reclaim(topic, entry, lowWater(entry));
            measure(topic, entry);
            if (inFlight.length > 0) await new Promise<void>((resolve) => setImmediate(resolve));
            continue;
          }
          await Promise.all(inFlight.map((flight) => flight.handled));
          inFlight.length = 0;
          failing = false;
          next = entry.groups.get(groupId)!;
          await sleep(retryDelayMs);
        }
      })();
      consumers.add(state);
      return {
        async stop() {
          if (!state.stopped) {
            const left = entry.active.get(groupId)! - 1;
            if (left > 0) entry.active.set(groupId, left);
            else entry.active.delete(groupId);
          }
          state.stopped = true;
          tracker.status.running = false;
          wakeUp?.();
          await state.done;
          consumers.delete(state);
        },
      };
    },
    async peek({ topic, groupId, limit, from }) {
      if (closed) throw new Error('the message log is closed');
      return peekPage(topic, groupId, limit, from);
    },
    async take({ topic, groupId, limit }, handler) {
      return takeInOrder(`${topic}\u0000${groupId}`, async () => {
        if (closed) throw new Error('the message log is closed');
        const entry = topicLog(topic);
        if (entry.active.has(groupId)) throw new Error(`group ${groupId} of ${topic} has a consumer in this process: its messages are taken by it`);
        const { messages, next } = peekPage(topic, groupId, limit);
        if (messages.length === 0) return messages;
        await handler(messages);
        // Durable before it resolves: a taken message is not handed over again after a crash.
        await wrote(() => groupsDb.put([topic, groupId], next[0]!), 'commit');
        entry.groups.set(groupId, Math.max(next[0]!, entry.groups.get(groupId) ?? 0));
        reclaim(topic, entry, lowWater(entry));
        measure(topic, entry);
        return messages;
      });
    },
    async positions(topic, groupId): Promise<GroupPosition[]> {
      if (closed) throw new Error('the message log is closed');
      const entry = topicLog(topic);
      return [{ partition: 0, committed: committedOf(entry, groupId), end: entry.end }];
    },
    async remove({ topic, groupId }, match) {
      return takeInOrder(`${topic}\u0000${groupId}`, async () => {
        if (closed) throw new Error('the message log is closed');
        return removeMatching(topic, match);
      });
    },
    async consumers() {
      return [...consumers].map(({ status }) => ({ ...status, lag: lagOf(topicLog(status.topic), status.group) }));
    },
    async ping() {
      if (closed) throw new Error('the message log is closed');
      if (writeError) throw new Error(`the durable message log cannot write: ${writeError.message}`);
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const state of consumers) state.stopped = true;
      for (const entry of topics.values()) for (const wake of entry.wake) wake();
      await Promise.all([...consumers].map((state) => state.done));
      // Writes waiting for the next group commit start now; pending writes are flushed before the environment closes.
      if (tick) {
        clearTimeout(tick);
        commitQueued();
      }
      await env.close();
    },
  };
}
