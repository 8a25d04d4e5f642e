import { randomUUID } from 'node:crypto';
import { open, type Database, type RootDatabase } from 'lmdb';
import { diskGuard } from '../disk-guard.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { DeferJob, JOB_ID_RETENTION_MS, backoffDelay, type JobDefinition, type JobHandler, type Jobs } from './jobs.js';

/** Where the embedded runner keeps its jobs. */
export interface LmdbJobsOptions {
  /** Folder of the LMDB environment, created if absent. One runner (one process) per folder. */
  dir: string;
  /** Free space kept on the disk (DISK_MIN_FREE_MB): enqueues are refused below it (shared/disk-guard.ts). */
  minFreeBytes?: number;
}

/**
 * How many times a job may be found running after a crash and still be run again as the same
 * attempt: BullMQ's default maxStalledCount. One more stall fails it for good, so that a job whose
 * handler kills the process cannot crash every restart.
 */
export const MAX_STALLS = 1;

/** Pause between two passes deleting the ids of finished jobs whose retention has passed. */
const PRUNE_EVERY_MS = 60_000;
/** Entries deleted per write transaction by a pruning pass. */
const PRUNE_BATCH = 5_000;
/** setTimeout's longest delay; a later due time is reached in several steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

type Key = [name: string, id: string];
type Outcome = keyof typeof JOB_ID_RETENTION_MS;

/** A job's progress, stored beside its data (which is written once, at enqueue). */
interface JobState {
  /** The attempt to run next (1 for the first). */
  attempt: number;
  /** When it may run, ms since the epoch: its enqueue time, its delay, or its retry's backoff. */
  dueAt: number;
  /** Enqueue order: jobs due at the same time run first in, first out. */
  seq: number;
  /** Times it was found running when the runner opened (the process died during its handler). */
  stalls: number;
  /** Its handler was started and has not settled yet. */
  running: boolean;
}

/** A finished job's id, kept to deduplicate enqueues until `until`. */
interface FinishedId {
  until: number;
  /** When it finished: its place in the kind's retainFinished order. */
  at: number;
}

/** A `repeat` schedule: survives restarts with its next due time, like BullMQ's job scheduler. */
interface Schedule {
  everyMs: number;
  data: unknown;
  nextAt: number;
}

/** A job this process knows of (queued, delayed, running, or being written or finished). */
interface Live {
  name: string;
  id: string;
  state: JobState;
  /** Set while it waits for its due time. */
  timer?: NodeJS.Timeout;
}

/** The end of a range over every key of a kind (keys start with the kind's name; names hold no control characters). */
const kindRange = (name: string) => ({ start: [name], end: [`${name}\u0001`] });

/**
 * The one-process mode's job runner, durable on LMDB: BullMQ's policy (attempts, exponential backoff
 * with jitter, concurrency per kind, idempotent job ids kept JOB_ID_RETENTION_MS within
 * retainFinished, DeferJob, `repeat` schedules that keep their time) with every job on disk.
 *
 * - `enqueue` resolves once the job is committed and flushed to disk (fsync): a caller that then
 *   commits a consumer offset cannot lose the job, even on power loss.
 * - Opening the runner on a folder resumes every job found there: queued ones in their order,
 *   delayed ones (a delay, a retry's backoff, a DeferJob) at their due time with their attempt
 *   number, and those that were running when the process died. A running job is run again as the
 *   same attempt (its handler may not have got far, as BullMQ's stalled jobs); found running a
 *   second time (MAX_STALLS), it fails for good, as BullMQ fails a job stalled more than its limit.
 *   A handler starts once its job's running mark is committed. The state changes after an enqueue
 *   (started, retry due, finished) are committed without waiting for the flush: a power loss may run
 *   an attempt again (at least once), a process crash does not.
 * - Bounded disk: a finished job's data and state are deleted in the transaction that records its
 *   id; ids go once their retention has passed or beyond twice retainFinished of the kind.
 */
export function createLmdbJobs(log: Logger, metrics: Metrics, options: LmdbJobsOptions): Jobs {
  const root: RootDatabase = open({ path: options.dir, maxDbs: 8 });
  const disk = diskGuard(options.dir, options.minFreeBytes ?? 0);
  const states: Database<JobState, Key> = root.openDB({ name: 'states' });
  // JSON text, as BullMQ stores job data: a handler sees the same values in both modes (dates as
  // strings), and data that cannot be serialised is refused before anything is written.
  const payloads: Database<string, Key> = root.openDB({ name: 'payloads', encoding: 'string' });
  const finished: Database<FinishedId, Key> = root.openDB({ name: 'finished' });
  /** [until, name, id]: finished ids by expiry, for the age pruning. */
  const expiries: Database<true, [number, string, string]> = root.openDB({ name: 'expiries' });
  /** [name, at, id]: finished ids by finish time per kind, for the retainFinished bound. */
  const finishOrder: Database<true, [string, number, string]> = root.openDB({ name: 'finish-order' });
  const schedules: Database<Schedule, string> = root.openDB({ name: 'schedules' });

  const definitions = new Map<string, JobDefinition<unknown>>();
  const handlers = new Map<string, JobHandler<unknown>>();
  const live = new Map<string, Map<string, Live>>();
  const ready = new Map<string, Live[]>();
  const inFlight = new Map<string, Set<Promise<void>>>();
  /** Finished ids kept per kind (counted from disk when first needed). */
  const finishedCounts = new Map<string, number>();
  /** The schedules this process runs (their timers), per kind. */
  const repeating = new Map<string, { timer?: NodeJS.Timeout }>();
  /** `repeat` and `stopRepeating` of a kind, one after the other (a schedule is read, then written). */
  const scheduleChains = new Map<string, Promise<unknown>>();
  /** Writes not awaited by a caller, awaited by close before the environment closes. */
  const background = new Set<Promise<unknown>>();
  let seq = 0;
  /** The last write failure, until a write succeeds: ping reports it. */
  let storeFailure: Error | undefined;
  let closed = false;
  /** Set once no write may be issued any more (lmdb throws on a write to a closed environment). */
  let writable = true;
  let closing: Promise<void> | undefined;

  const liveOf = (name: string) => {
    let jobs = live.get(name);
    if (!jobs) live.set(name, (jobs = new Map<string, Live>()));
    return jobs;
  };
  const runningOf = (name: string) => {
    let tasks = inFlight.get(name);
    if (!tasks) inFlight.set(name, (tasks = new Set()));
    return tasks;
  };
  const forget = (job: Live) => {
    const jobs = live.get(job.name);
    if (jobs?.get(job.id) !== job) return;
    jobs.delete(job.id);
    if (jobs.size === 0) live.delete(job.name);
  };
  const failedWrite = (operation: string, error: unknown) => {
    storeFailure = error instanceof Error ? error : new Error(String(error));
    metrics.jobsStoreFailures.inc({ operation });
    log.error({ err: error, operation }, 'job store write failed');
  };
  /** Keeps a piece of work that no caller waits for until it settles, for close to wait for it. */
  const track = <T>(work: Promise<T>): Promise<T> => {
    background.add(work);
    void work.finally(() => background.delete(work)).catch(() => undefined);
    return work;
  };
  /** Issues writes (one transaction) that no caller waits for; a failure is counted and logged, and ping reports it. */
  const write = (operation: string, writes: () => unknown): Promise<void> => {
    if (!writable) return Promise.resolve();
    try {
      return track(
        root.batch(writes).then(
          () => {
            storeFailure = undefined;
          },
          (error: unknown) => failedWrite(operation, error),
        ),
      );
    } catch (error) {
      failedWrite(operation, error);
      return Promise.resolve();
    }
  };

  /** True while an enqueue with this id is ignored: the job is known, or finished within its retention. */
  const known = (name: string, id: string) => {
    if (live.get(name)?.has(id)) return true;
    const entry = finished.get([name, id]);
    return entry !== undefined && entry.until > Date.now();
  };

  const arm = (job: Live) => {
    // Closed: the job stays on disk for the next runner, and no timer holds the process.
    if (closed) return;
    const wait = job.state.dueAt - Date.now();
    if (wait <= 0) {
      let queue = ready.get(job.name);
      if (!queue) ready.set(job.name, (queue = []));
      queue.push(job);
      pump(job.name);
      return;
    }
    job.timer = setTimeout(
      () => {
        job.timer = undefined;
        if (!closed) arm(job);
      },
      Math.min(wait, MAX_TIMER_MS),
    );
  };

  const remember = (name: string, id: string, outcome: Outcome, previous: FinishedId | undefined) => {
    const at = Date.now();
    const until = at + JOB_ID_RETENTION_MS[outcome];
    states.remove([name, id]);
    payloads.remove([name, id]);
    if (previous) {
      expiries.remove([previous.until, name, id]);
      finishOrder.remove([name, previous.at, id]);
    }
    finished.put([name, id], { until, at });
    expiries.put([until, name, id], true);
    finishOrder.put([name, at, id], true);
  };

  /** Records the outcome: data and state go, the id stays for deduplication (one transaction). */
  const finish = (job: Live, outcome: Outcome) => {
    const previous = finished.get([job.name, job.id]);
    void track(
      write('finish', () => remember(job.name, job.id, outcome, previous)).then(() => {
        forget(job);
        const count = finishedCounts.get(job.name);
        if (count !== undefined && !previous) finishedCounts.set(job.name, count + 1);
        return trim(job.name);
      }),
    );
  };

  /** Keeps at most twice retainFinished finished ids of a kind, the newest retainFinished after a trim. */
  const trim = async (name: string) => {
    const retain = definitions.get(name)?.retainFinished;
    if (retain === undefined || !writable) return;
    let count = finishedCounts.get(name);
    if (count === undefined) finishedCounts.set(name, (count = finishOrder.getKeysCount(kindRange(name))));
    if (count <= retain * 2) return;
    const oldest = [...finishOrder.getKeys({ ...kindRange(name), limit: count - retain })];
    finishedCounts.set(name, count - oldest.length);
    for (let start = 0; start < oldest.length; start += PRUNE_BATCH) {
      const slice = oldest.slice(start, start + PRUNE_BATCH);
      const entries = slice.map(([, , id]) => finished.get([name, id]));
      await write('trim', () => {
        slice.forEach(([, at, id], index) => {
          finishOrder.remove([name, at, id]);
          const entry = entries[index];
          // The id finished again later, or is about to (its finish not yet committed): that entry stays.
          if (entry?.at !== at || live.get(name)?.has(id)) return;
          finished.remove([name, id]);
          expiries.remove([entry.until, name, id]);
        });
      });
    }
  };

  /** Deletes the finished ids whose retention has passed. */
  let pruning: Promise<void> | undefined;
  const prune = () =>
    (pruning ??= (async () => {
      try {
        for (;;) {
          if (!writable) return;
          const expired = [...expiries.getKeys({ end: [Date.now()], limit: PRUNE_BATCH })];
          if (expired.length === 0) return;
          const entries = expired.map(([, name, id]) => finished.get([name, id]));
          await write('prune', () => {
            expired.forEach(([until, name, id], index) => {
              expiries.remove([until, name, id]);
              const entry = entries[index];
              if (entry?.until !== until || live.get(name)?.has(id)) return;
              finished.remove([name, id]);
              finishOrder.remove([name, entry.at, id]);
              const count = finishedCounts.get(name);
              if (count !== undefined) finishedCounts.set(name, count - 1);
            });
          });
          if (expired.length < PRUNE_BATCH) return;
        }
      } finally {
        pruning = undefined;
      }
    })());
  const pruneTimer = setInterval(() => void prune(), PRUNE_EVERY_MS);
  pruneTimer.unref();

  const pump = (name: string) => {
    const handler = handlers.get(name);
    const definition = definitions.get(name);
    const queue = ready.get(name);
    if (!handler || !definition || !queue || closed) return;
    const tasks = runningOf(name);
    while (queue.length > 0 && tasks.size < definition.concurrency) {
      const job = queue.shift()!;
      const key: Key = [name, job.id];
      const text = payloads.get(key);
      const data: unknown = text ? JSON.parse(text) : undefined;
      job.state = { ...job.state, running: true };
      const state = job.state;
      const final = job.state.attempt >= definition.attempts;
      // The handler starts once the job is marked running on disk (committed, not flushed): a handler
      // that kills the process at once is still counted as stalled at the next start.
      const task = write('start', () => states.put(key, state))
        .then(() => handler(data, { id: job.id, attempt: state.attempt, final }))
        .then(
          () => {
            metrics.jobsProcessed.inc({ job: name, outcome: 'completed' });
            finish(job, 'completed');
          },
          (error: unknown) => {
            if (error instanceof DeferJob) return retry(job, job.state.attempt, error.delayMs);
            if (final) {
              metrics.jobsProcessed.inc({ job: name, outcome: 'failed' });
              log.warn({ job: name, id: job.id, attempt: job.state.attempt, err: error }, 'job failed for good');
              return finish(job, 'failed');
            }
            metrics.jobsProcessed.inc({ job: name, outcome: 'retried' });
            retry(job, job.state.attempt + 1, backoffDelay(definition, job.state.attempt + 1));
          },
        )
        .finally(() => {
          tasks.delete(task);
          pump(name);
        });
      tasks.add(task);
    }
  };

  /** Runs the job again as `attempt` after `delayMs` (its new due time on disk first, as BullMQ's delayed set). */
  const retry = (job: Live, attempt: number, delayMs: number) => {
    job.state = { ...job.state, attempt, dueAt: Date.now() + Math.max(0, delayMs), running: false };
    const state = job.state;
    void write('retry', () => states.put([job.name, job.id], state));
    arm(job);
  };

  /** Writes new jobs (data and state in one transaction) and resolves once they are flushed to disk. */
  const add = async (name: string, jobs: { id: string; data: unknown; delayMs?: number }[]) => {
    if (closed) throw new Error('the job runner is closed');
    try {
      disk.check();
    } catch (error) {
      failedWrite('enqueue', error);
      throw error;
    }
    const added: { job: Live; data: string }[] = [];
    const now = Date.now();
    // Serialised first: data JSON cannot hold (a BigInt, a cycle) throws here, before anything is written.
    const texts = jobs.map(({ data }) => JSON.stringify(data) ?? '');
    for (const [index, { id, delayMs }] of jobs.entries()) {
      const data = texts[index]!;
      // Also a second copy in the same call: the first is live by now.
      if (known(name, id)) continue;
      const job: Live = { name, id, state: { attempt: 1, dueAt: now + (delayMs ?? 0), seq: seq++, stalls: 0, running: false } };
      liveOf(name).set(id, job);
      added.push({ job, data });
    }
    if (added.length === 0) return;
    try {
      // Tracked: close waits for an enqueue on its way to disk before it closes the environment.
      await track(
        (async () => {
          await root.batch(() => {
            for (const { job, data } of added) {
              payloads.put([name, job.id], data);
              states.put([name, job.id], job.state);
            }
          });
          await root.flushed;
        })(),
      );
      storeFailure = undefined;
    } catch (error) {
      for (const { job } of added) forget(job);
      failedWrite('enqueue', error);
      throw error;
    }
    for (const { job } of added) arm(job);
  };

  // Resume what the folder holds: jobs in their order, those found running counted as stalled.
  {
    const resumed: Live[] = [];
    const stalled: { job: Live; failed: boolean }[] = [];
    for (const { key, value } of states.getRange()) {
      const [name, id] = key;
      seq = Math.max(seq, value.seq + 1);
      const job: Live = { name, id, state: value };
      liveOf(name).set(id, job);
      if (value.running) {
        const stalls = value.stalls + 1;
        job.state = { ...value, stalls, running: false };
        stalled.push({ job, failed: stalls > MAX_STALLS });
        if (stalls > MAX_STALLS) continue;
      }
      resumed.push(job);
    }
    for (const { job, failed } of stalled) {
      const fields = { job: job.name, id: job.id, attempt: job.state.attempt, stalls: job.state.stalls };
      if (failed) {
        metrics.jobsProcessed.inc({ job: job.name, outcome: 'failed' });
        log.warn(fields, 'job failed for good: it was running when the process stopped, more often than allowed');
        finish(job, 'failed');
      } else {
        log.warn(fields, 'job was running when the process stopped: it runs again as the same attempt');
        const state = job.state;
        void write('stalled', () => states.put([job.name, job.id], state));
      }
    }
    resumed.sort((a, b) => a.state.dueAt - b.state.dueAt || a.state.seq - b.state.seq);
    for (const job of resumed) arm(job);
    if (resumed.length > 0 || stalled.length > 0) log.info({ resumed: resumed.length, stalled: stalled.length }, 'jobs resumed from disk');
    void prune();
  }

  /** Arms the timer of a kind's schedule for its next due time; when it fires, the run is enqueued and the time moves on. */
  const armSchedule = (name: string) => {
    const current = repeating.get(name);
    const schedule = schedules.get(name);
    if (!current || !schedule || closed) return;
    current.timer = setTimeout(
      () => {
        current.timer = undefined;
        void chain(name, () => tick(name)).catch((error: unknown) => log.error({ err: error, job: name }, 'repeated job not enqueued'));
      },
      Math.min(Math.max(0, schedule.nextAt - Date.now()), MAX_TIMER_MS),
    );
    current.timer.unref();
  };
  /** Enqueues the due run of a schedule (its id names its due time: a crash before the time moved on does not double it). */
  const tick = async (name: string) => {
    const current = repeating.get(name);
    const schedule = schedules.get(name);
    if (!current || !schedule || closed) return;
    const now = Date.now();
    if (schedule.nextAt <= now) {
      await add(name, [{ id: `${name}:every:${schedule.nextAt}`, data: schedule.data }]);
      // Runs missed while no process ran are not made up: the next one is the next period's.
      const nextAt = schedule.nextAt + (Math.floor((now - schedule.nextAt) / schedule.everyMs) + 1) * schedule.everyMs;
      await schedules.put(name, { ...schedule, nextAt });
    }
    armSchedule(name);
  };
  const chain = <T>(name: string, step: () => Promise<T>): Promise<T> => {
    const next = (scheduleChains.get(name) ?? Promise.resolve()).then(step, step);
    const settled = next.catch(() => undefined);
    scheduleChains.set(name, settled);
    void settled.then(() => {
      if (scheduleChains.get(name) === settled) scheduleChains.delete(name);
    });
    return next;
  };

  return {
    kind: 'lmdb',
    async enqueue(definition, data, options = {}) {
      definitions.set(definition.name, definition);
      await add(definition.name, [{ id: options.jobId ?? randomUUID(), data, delayMs: options.delayMs }]);
    },
    async enqueueMany(definition, jobs) {
      definitions.set(definition.name, definition);
      await add(
        definition.name,
        jobs.map((job) => ({ id: job.jobId ?? randomUUID(), data: job.data })),
      );
    },
    async process(definition, handler) {
      definitions.set(definition.name, definition);
      const ours = handler as JobHandler<unknown>;
      handlers.set(definition.name, ours);
      pump(definition.name);
      return {
        async stop() {
          if (handlers.get(definition.name) === ours) handlers.delete(definition.name);
          await Promise.allSettled([...runningOf(definition.name)]);
        },
      };
    },
    repeat(definition, data, everyMs) {
      const name = definition.name;
      return chain(name, async () => {
        if (closed) throw new Error('the job runner is closed');
        definitions.set(name, definition);
        const stored = schedules.get(name);
        let current = repeating.get(name);
        if (!current) repeating.set(name, (current = {}));
        // Declared again with the same period, by this process or after a restart (as BullMQ's
        // scheduler): the schedule keeps its time.
        if (stored?.everyMs === everyMs) {
          await schedules.put(name, { ...stored, data });
          if (!current.timer) armSchedule(name);
          return;
        }
        clearTimeout(current.timer);
        current.timer = undefined;
        const now = Date.now();
        await schedules.put(name, { everyMs, data, nextAt: now });
        await tick(name);
      });
    },
    stopRepeating(definition) {
      const name = definition.name;
      return chain(name, async () => {
        clearTimeout(repeating.get(name)?.timer);
        repeating.delete(name);
        if (writable && schedules.get(name)) await schedules.remove(name);
      });
    },
    async waiting(definition) {
      return ready.get(definition.name)?.length ?? 0;
    },
    async ping() {
      if (closed) throw new Error('the job runner is closed');
      if (storeFailure) throw new Error(`the job store failed its last write: ${storeFailure.message}`, { cause: storeFailure });
    },
    close() {
      closing ??= (async () => {
        closed = true;
        clearInterval(pruneTimer);
        for (const jobs of live.values()) for (const job of jobs.values()) clearTimeout(job.timer);
        for (const { timer } of repeating.values()) clearTimeout(timer);
        await Promise.allSettled([...inFlight.values()].flatMap((tasks) => [...tasks]));
        await Promise.allSettled([...scheduleChains.values()]);
        await pruning;
        // The finishes of the last jobs, then no write any more.
        while (background.size > 0) await Promise.allSettled([...background]);
        writable = false;
        await root.flushed;
        await root.close();
      })();
      return closing;
    },
  };
}
