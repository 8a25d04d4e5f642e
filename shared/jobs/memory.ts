import { randomUUID } from 'node:crypto';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { DeferJob, JOB_ID_RETENTION_MS, backoffDelay, type JobDefinition, type JobHandler, type Jobs } from './jobs.js';

interface Pending {
  id: string;
  name: string;
  data: unknown;
  attempt: number;
}

/**
 * In-process job runner with BullMQ's policy: attempts, exponential backoff with jitter, bounded
 * concurrency per kind, idempotent job ids kept as long as BullMQ keeps finished jobs. Jobs live in memory: the one-process mode accepts that
 * a crash loses queued jobs (the production mode keeps them in Redis).
 */
export function createMemoryJobs(log: Logger, metrics: Metrics): Jobs {
  const definitions = new Map<string, JobDefinition<unknown>>();
  const handlers = new Map<string, JobHandler<unknown>>();
  const queues = new Map<string, Pending[]>();
  /** Job id → until when it deduplicates enqueues (Infinity while queued or running). */
  const known = new Map<string, number>();
  /** Size of `known` past which expired ids are pruned. */
  let pruneAt = 100_000;
  /** Finished job ids per kind, oldest first, for the kind's retainFinished bound. */
  const finished = new Map<string, string[]>();
  const remember = (name: string, id: string, outcome: keyof typeof JOB_ID_RETENTION_MS) => {
    known.set(id, Date.now() + JOB_ID_RETENTION_MS[outcome]);
    const retain = definitions.get(name)?.retainFinished;
    if (retain === undefined) return;
    const ids = finished.get(name) ?? [];
    finished.set(name, ids);
    ids.push(id);
    if (ids.length > retain * 2) for (const old of ids.splice(0, ids.length - retain)) if (known.get(old) !== Infinity) known.delete(old);
  };
  const timers = new Set<NodeJS.Timeout>();
  /** The schedules of `repeat`, per kind. */
  const repeating = new Map<string, { timer: NodeJS.Timeout; everyMs: number; data: unknown }>();
  /** Running jobs, per kind. */
  const inFlight = new Map<string, Set<Promise<void>>>();
  const runningOf = (name: string) => {
    let tasks = inFlight.get(name);
    if (!tasks) inFlight.set(name, (tasks = new Set()));
    return tasks;
  };
  let closed = false;

  const pump = (name: string) => {
    const handler = handlers.get(name);
    const definition = definitions.get(name);
    const queue = queues.get(name);
    if (!handler || !definition || !queue || closed) return;
    const tasks = runningOf(name);
    while (queue.length > 0 && tasks.size < definition.concurrency) {
      const job = queue.shift()!;
      const final = job.attempt >= definition.attempts;
      const task = handler(job.data, { id: job.id, attempt: job.attempt, final })
        .then(
          () => {
            metrics.jobsProcessed.inc({ job: name, outcome: 'completed' });
            remember(name, job.id, 'completed');
          },
          (error: unknown) => {
            if (error instanceof DeferJob) return schedule(job, error.delayMs);
            if (final) {
              metrics.jobsProcessed.inc({ job: name, outcome: 'failed' });
              log.warn({ job: name, id: job.id, attempt: job.attempt, err: error }, 'job failed for good');
              remember(name, job.id, 'failed');
              return;
            }
            metrics.jobsProcessed.inc({ job: name, outcome: 'retried' });
            schedule({ ...job, attempt: job.attempt + 1 }, backoffDelay(definition, job.attempt + 1));
          },
        )
        .finally(() => {
          tasks.delete(task);
          pump(name);
        });
      tasks.add(task);
    }
  };

  const schedule = (job: Pending, delayMs: number) => {
    const push = () => {
      const queue = queues.get(job.name) ?? [];
      queues.set(job.name, queue);
      queue.push(job);
      pump(job.name);
    };
    if (delayMs <= 0) return push();
    const timer = setTimeout(() => {
      timers.delete(timer);
      push();
    }, delayMs);
    timers.add(timer);
  };

  return {
    kind: 'memory',
    async enqueue(definition, data, options = {}) {
      definitions.set(definition.name, definition as JobDefinition<unknown>);
      const id = options.jobId ?? randomUUID();
      const until = known.get(id);
      if (until !== undefined && until > Date.now()) return;
      if (known.size > pruneAt) {
        // Expired ids go in one pass, and the next pass waits until the map has doubled: a scan on
        // every enqueue once 100 000 ids are kept (finished ones stay an hour) made enqueueing quadratic.
        const now = Date.now();
        for (const [key, expiry] of known) if (expiry <= now) known.delete(key);
        pruneAt = Math.max(100_000, known.size * 2);
      }
      known.set(id, Infinity);
      schedule({ id, name: definition.name, data, attempt: 1 }, options.delayMs ?? 0);
    },
    async enqueueMany(definition, jobs) {
      for (const job of jobs) await this.enqueue(definition, job.data, { jobId: job.jobId });
    },
    async process(definition, handler) {
      definitions.set(definition.name, definition as JobDefinition<unknown>);
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
    async repeat(definition, data, everyMs) {
      const current = repeating.get(definition.name);
      // Declared again with the same period (as BullMQ's scheduler): the schedule keeps its time.
      if (current?.everyMs === everyMs) {
        current.data = data;
        return;
      }
      clearInterval(current?.timer);
      const schedule = { timer: setInterval(() => void tick(), everyMs), everyMs, data };
      schedule.timer.unref();
      // An id per period: a run still queued is not doubled.
      const tick = () => this.enqueue(definition, schedule.data, { jobId: `${definition.name}:every:${Math.floor(Date.now() / everyMs)}` });
      repeating.set(definition.name, schedule);
      await tick();
    },
    async stopRepeating(definition) {
      clearInterval(repeating.get(definition.name)?.timer);
      repeating.delete(definition.name);
    },
    async waiting(definition) {
      return queues.get(definition.name)?.length ?? 0;
    },
    async ping() {},
    async close() {
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      for (const { timer } of repeating.values()) clearInterval(timer);
      await Promise.allSettled([...inFlight.values()].flatMap((tasks) => [...tasks]));
    },
  };
}
