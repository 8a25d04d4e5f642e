import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Context } from '../context.js';
import { closeContext, createTestContext, SERVICES_MODE, uniqueName } from '#tests/support/context.js';
import { waitFor } from '#tests/support/wait.js';
import { createBullmqJobs } from './bullmq.js';
import { DeferJob, defineJob, type JobContext, type Jobs } from './jobs.js';
import { createLmdbJobs } from './lmdb.js';

/** BullMQ polls Redis and moves delayed jobs on its own clock: generous but bounded. */
const DEADLINE_MS = 10_000;

let context: Context;

/** The runner the test context builds in this mode. */
const CONTEXT_JOBS: Jobs['kind'] = SERVICES_MODE ? 'bullmq' : 'lmdb';
/** Folders of this file's LMDB runners. */
const lmdbRoot = mkdtempSync(join(tmpdir(), 'linktrack-test-jobs-'));
let lmdbJobs: Jobs | undefined;

/** A job runner the suites below run over: the context's, and the one-process mode's durable one until the context builds it. */
interface Runner {
  kind: Jobs['kind'];
  /** The runner the behaviour tests share. */
  jobs: () => Jobs;
  /** A runner of its own, built as the composition root builds it. */
  own: () => Jobs;
}

const RUNNERS: Runner[] = [
  {
    kind: CONTEXT_JOBS,
    jobs: () => context.jobs,
    own: () =>
      context.config.redisUrl
        ? createBullmqJobs(context.config.redisUrl, context.log, context.metrics)
        : createLmdbJobs(context.log, context.metrics, { dir: mkdtempSync(join(lmdbRoot, 'own-')) }),
  },
  // In the services run, the one-process mode's durable runner too.
  ...(CONTEXT_JOBS === 'bullmq'
    ? [
        {
          kind: 'lmdb' as const,
          jobs: () => (lmdbJobs ??= createLmdbJobs(context.log, context.metrics, { dir: join(lmdbRoot, 'shared') })),
          own: () => createLmdbJobs(context.log, context.metrics, { dir: mkdtempSync(join(lmdbRoot, 'own-')) }),
        },
      ]
    : []),
];

beforeAll(async () => {
  context = await createTestContext();
});

afterAll(async () => {
  await lmdbJobs?.close();
  await closeContext(context);
  rmSync(lmdbRoot, { recursive: true, force: true });
});

/** jobs_processed_total of one job kind, by outcome. */
async function outcomes(job: string): Promise<Record<string, number>> {
  const metric = await context.metrics.jobsProcessed.get();
  return Object.fromEntries(metric.values.filter((value) => value.labels.job === job).map((value) => [String(value.labels.outcome), value.value]));
}

interface Attempt extends JobContext {
  at: number;
}

for (const runner of RUNNERS) {
  describe(`jobs (${runner.kind})`, () => {
    it('is the implementation asked for and answers ping', async () => {
      expect(runner.jobs().kind).toBe(runner.kind);
      await expect(runner.jobs().ping()).resolves.toBeUndefined();
    });

    it('runs an enqueued job once with its data, as attempt 1 and not final', async () => {
      const job = defineJob<{ link: string; tags: string[]; count: number }>({ name: uniqueName('run'), attempts: 3, backoffMs: 20, concurrency: 1 });
      const seen: { data: unknown; job: JobContext }[] = [];
      await runner.jobs().process(job, async (data, jobContext) => {
        seen.push({ data, job: jobContext });
      });
      await runner.jobs().enqueue(job, { link: 'abc', tags: ['x', 'y'], count: 3 });
      await waitFor(async () => (await outcomes(job.name)).completed === 1, DEADLINE_MS, { message: 'the job to complete' });
      expect(seen).toHaveLength(1);
      expect(seen[0]!.data).toEqual({ link: 'abc', tags: ['x', 'y'], count: 3 });
      expect(seen[0]!.job).toMatchObject({ attempt: 1, final: false });
      expect(seen[0]!.job.id).toEqual(expect.any(String));
      expect(seen[0]!.job.id).not.toBe('');
    });

    it('runs jobs enqueued before a worker processes their kind once the worker starts', async () => {
      const job = defineJob<{ n: number }>({ name: uniqueName('early'), attempts: 1, backoffMs: 20, concurrency: 1 });
      await runner.jobs().enqueue(job, { n: 1 });
      await runner.jobs().enqueue(job, { n: 2 });
      const seen: number[] = [];
      await runner.jobs().process(job, async (data) => {
        seen.push(data.n);
      });
      await waitFor(() => seen.length === 2, DEADLINE_MS, { message: 'both jobs' });
      expect(seen).toEqual([1, 2]);
    });

    it('passes a given job id to the handler', async () => {
      const job = defineJob<{ n: number }>({ name: uniqueName('id'), attempts: 1, backoffMs: 20, concurrency: 1 });
      const jobId = uniqueName('job');
      const ids: string[] = [];
      await runner.jobs().process(job, async (_data, jobContext) => {
        ids.push(jobContext.id);
      });
      await runner.jobs().enqueue(job, { n: 1 }, { jobId });
      await waitFor(() => ids.length === 1, DEADLINE_MS, { message: 'the job' });
      expect(ids).toEqual([jobId]);
    });

    it('retries a job that fails twice with attempts 1, 2, 3 and marks only the last allowed attempt final', async () => {
      const job = defineJob<{ key: string }>({ name: uniqueName('retry'), attempts: 3, backoffMs: 20, concurrency: 1 });
      const attempts: Attempt[] = [];
      const data: unknown[] = [];
      await runner.jobs().process(job, async (jobData, jobContext) => {
        attempts.push({ ...jobContext, at: Date.now() });
        data.push(jobData);
        if (jobContext.attempt < 3) throw new Error(`transient failure ${jobContext.attempt}`);
      });
      await runner.jobs().enqueue(job, { key: 'same data on every attempt' });
      await waitFor(async () => (await outcomes(job.name)).completed === 1, DEADLINE_MS, { message: 'the job to complete' });
      expect(attempts.map(({ attempt, final }) => ({ attempt, final }))).toEqual([
        { attempt: 1, final: false },
        { attempt: 2, final: false },
        { attempt: 3, final: true },
      ]);
      expect(new Set(attempts.map((attempt) => attempt.id)).size).toBe(1);
      expect(data).toEqual(Array.from({ length: 3 }, () => ({ key: 'same data on every attempt' })));
      expect(await outcomes(job.name)).toEqual({ retried: 2, completed: 1 });
    });

    it('does not mark a retry final while more attempts remain', async () => {
      const job = defineJob<{ key: string }>({ name: uniqueName('retry-more'), attempts: 5, backoffMs: 20, concurrency: 1 });
      const attempts: JobContext[] = [];
      await runner.jobs().process(job, async (_data, jobContext) => {
        attempts.push(jobContext);
        if (jobContext.attempt < 3) throw new Error('transient failure');
      });
      await runner.jobs().enqueue(job, { key: 'k' });
      await waitFor(async () => (await outcomes(job.name)).completed === 1, DEADLINE_MS, { message: 'the job to complete' });
      expect(attempts.map(({ attempt, final }) => ({ attempt, final }))).toEqual([
        { attempt: 1, final: false },
        { attempt: 2, final: false },
        { attempt: 3, final: false },
      ]);
    });

    it('waits an exponential backoff between attempts', async () => {
      const backoffMs = 100;
      const job = defineJob<{ key: string }>({ name: uniqueName('backoff'), attempts: 3, backoffMs, concurrency: 1 });
      const attempts: Attempt[] = [];
      await runner.jobs().process(job, async (_data, jobContext) => {
        attempts.push({ ...jobContext, at: Date.now() });
        throw new Error('always failing');
      });
      await runner.jobs().enqueue(job, { key: 'k' });
      await waitFor(async () => (await outcomes(job.name)).failed === 1, DEADLINE_MS, { message: 'the job to fail for good' });
      const [first, second, third] = attempts;
      // At least the low end of the jitter (-20 %), less a millisecond of clock rounding.
      expect(second!.at - first!.at).toBeGreaterThanOrEqual(backoffMs * 0.8 - 1);
      expect(third!.at - second!.at).toBeGreaterThanOrEqual(2 * backoffMs * 0.8 - 1);
    });

    it('stops a job that always fails after `attempts` tries and counts it failed once', async () => {
      const job = defineJob<{ key: string }>({ name: uniqueName('fail'), attempts: 3, backoffMs: 20, concurrency: 1 });
      const attempts: JobContext[] = [];
      await runner.jobs().process(job, async (_data, jobContext) => {
        attempts.push(jobContext);
        throw new Error('permanent failure');
      });
      await runner.jobs().enqueue(job, { key: 'k' });
      await waitFor(async () => (await outcomes(job.name)).failed === 1, DEADLINE_MS, { message: 'the job to fail for good' });
      expect(attempts.map(({ attempt, final }) => ({ attempt, final }))).toEqual([
        { attempt: 1, final: false },
        { attempt: 2, final: false },
        { attempt: 3, final: true },
      ]);
      // Failed for good means no attempt is scheduled any more: the outcome counts are final.
      expect(await outcomes(job.name)).toEqual({ retried: 2, failed: 1 });
    });

    it('does not retry a job allowed a single attempt', async () => {
      const job = defineJob<{ key: string }>({ name: uniqueName('once'), attempts: 1, backoffMs: 20, concurrency: 1 });
      const attempts: JobContext[] = [];
      await runner.jobs().process(job, async (_data, jobContext) => {
        attempts.push(jobContext);
        throw new Error('failure');
      });
      await runner.jobs().enqueue(job, { key: 'k' });
      await waitFor(async () => (await outcomes(job.name)).failed === 1, DEADLINE_MS, { message: 'the job to fail for good' });
      expect(attempts.map(({ attempt, final }) => ({ attempt, final }))).toEqual([{ attempt: 1, final: true }]);
      expect(await outcomes(job.name)).toEqual({ failed: 1 });
    });

    it('runs a job enqueued twice with the same job id once', async () => {
      const job = defineJob<{ label: string }>({ name: uniqueName('dedup'), attempts: 1, backoffMs: 20, concurrency: 1 });
      const jobId = uniqueName('same');
      await runner.jobs().enqueue(job, { label: 'first' }, { jobId });
      await runner.jobs().enqueue(job, { label: 'second' }, { jobId });
      await runner.jobs().enqueue(job, { label: 'sentinel' });
      const seen: string[] = [];
      await runner.jobs().process(job, async (data) => {
        seen.push(data.label);
      });
      // One at a time, in order: once the sentinel ran, a second copy would have run before it.
      await waitFor(() => seen.includes('sentinel'), DEADLINE_MS, { message: 'the sentinel job' });
      expect(seen).toEqual(['first', 'sentinel']);
    });

    it('ignores an enqueue with the id of a job that is waiting for its retry', async () => {
      const job = defineJob<{ label: string }>({ name: uniqueName('dedup-retry'), attempts: 3, backoffMs: 300, concurrency: 1 });
      const jobId = uniqueName('same');
      const seen: { label: string; attempt: number }[] = [];
      await runner.jobs().process(job, async (data, jobContext) => {
        seen.push({ label: data.label, attempt: jobContext.attempt });
        if (data.label === 'original' && jobContext.attempt === 1) throw new Error('transient failure');
      });
      await runner.jobs().enqueue(job, { label: 'original' }, { jobId });
      await waitFor(async () => (await outcomes(job.name)).retried === 1, DEADLINE_MS, { message: 'the first failure' });
      await runner.jobs().enqueue(job, { label: 'duplicate' }, { jobId });
      await runner.jobs().enqueue(job, { label: 'sentinel' });
      await waitFor(async () => (await outcomes(job.name)).completed === 2, DEADLINE_MS, { message: 'the retry and the sentinel' });
      expect(seen.filter((entry) => entry.label !== 'sentinel')).toEqual([
        { label: 'original', attempt: 1 },
        { label: 'original', attempt: 2 },
      ]);
    });

    it('keeps deduplicating a job id after the job completed, on both backends', async () => {
      const job = defineJob<{ label: string }>({ name: uniqueName('dedup-done'), attempts: 1, backoffMs: 20, concurrency: 1 });
      const jobId = uniqueName('same');
      const seen: string[] = [];
      await runner.jobs().process(job, async (data) => {
        seen.push(data.label);
      });
      await runner.jobs().enqueue(job, { label: 'first' }, { jobId });
      await waitFor(() => seen.includes('first'), DEADLINE_MS, { message: 'the first job' });
      await waitFor(async () => (await outcomes(job.name)).completed === 1, DEADLINE_MS, { message: 'completion' });
      await runner.jobs().enqueue(job, { label: 'again' }, { jobId });
      await runner.jobs().enqueue(job, { label: 'sentinel' });
      await waitFor(() => seen.includes('sentinel'), DEADLINE_MS, { message: 'the sentinel job' });
      expect(seen).toEqual(['first', 'sentinel']);
    });

    it('enqueues many jobs in one call, deduplicating their ids', async () => {
      const job = defineJob<{ n: number }>({ name: uniqueName('bulk'), attempts: 1, backoffMs: 20, concurrency: 4 });
      const seen: number[] = [];
      await runner.jobs().process(job, async (data) => {
        seen.push(data.n);
      });
      const prefix = uniqueName('bulk-id');
      await runner.jobs().enqueueMany(
        job,
        Array.from({ length: 20 }, (_, n) => ({ data: { n }, jobId: `${prefix}-${n}` })),
      );
      await runner.jobs().enqueueMany(job, [{ data: { n: 100 }, jobId: `${prefix}-3` }, { data: { n: 21 } }]);
      await waitFor(() => seen.length >= 21, DEADLINE_MS, { message: 'all jobs' });
      await sleep(100);
      expect([...seen].sort((a, b) => a - b)).toEqual([...Array.from({ length: 20 }, (_, n) => n), 21]);
    });

    it('runs a deferred job again later as the same attempt, not as a failure', async () => {
      const job = defineJob<{ label: string }>({ name: uniqueName('defer'), attempts: 1, backoffMs: 20, concurrency: 1 });
      const runs: { attempt: number; at: number }[] = [];
      await runner.jobs().process(job, async (_data, jobContext) => {
        runs.push({ attempt: jobContext.attempt, at: Date.now() });
        if (runs.length < 3) throw new DeferJob(100);
      });
      await runner.jobs().enqueue(job, { label: 'deferred' });
      await waitFor(async () => (await outcomes(job.name)).completed === 1, DEADLINE_MS, { message: 'completion after two deferrals' });
      expect(runs.map((run) => run.attempt)).toEqual([1, 1, 1]);
      expect(runs[2]!.at - runs[0]!.at).toBeGreaterThanOrEqual(190);
      expect((await outcomes(job.name)).failed ?? 0).toBe(0);
    });

    it('keeps deduplicating at most retainFinished finished ids of a kind', async () => {
      const job = defineJob<{ n: number }>({ name: uniqueName('retain'), attempts: 1, backoffMs: 20, concurrency: 1, retainFinished: 2 });
      const seen: number[] = [];
      await runner.jobs().process(job, async (data) => {
        seen.push(data.n);
      });
      const prefix = uniqueName('retain-id');
      for (let n = 0; n < 6; n++) {
        await runner.jobs().enqueue(job, { n }, { jobId: `${prefix}-${n}` });
        await waitFor(() => seen.includes(n), DEADLINE_MS, { message: `job ${n}` });
        await waitFor(async () => (await outcomes(job.name)).completed === n + 1, DEADLINE_MS, { message: `completion ${n}` });
      }
      // The newest finished id still deduplicates; the oldest was let go and runs again.
      await runner.jobs().enqueue(job, { n: 50 }, { jobId: `${prefix}-5` });
      await runner.jobs().enqueue(job, { n: 60 }, { jobId: `${prefix}-0` });
      await waitFor(() => seen.includes(60), DEADLINE_MS, { message: 'the re-run of the oldest id' });
      expect(seen).not.toContain(50);
    });

    it('runs a repeated job at once and then every period, one schedule however often it is declared, until it is removed', async () => {
      const job = defineJob<{ label: string }>({ name: uniqueName('repeat'), attempts: 1, backoffMs: 20, concurrency: 1 });
      const runs: { at: number; label: string }[] = [];
      await runner.jobs().process(job, async (data) => {
        runs.push({ at: Date.now(), label: data.label });
      });
      const declared = Date.now();
      await runner.jobs().repeat(job, { label: 'tick' }, 400);
      // A second worker process declaring the same schedule at its start.
      await runner.jobs().repeat(job, { label: 'tick' }, 400);
      await waitFor(() => runs.length >= 1, DEADLINE_MS, { message: 'the first run' });
      expect(runs[0]!.at - declared).toBeLessThan(400);
      await waitFor(() => runs.length >= 4, DEADLINE_MS, { message: 'four runs' });
      // One schedule: four runs span three periods (two schedules would run twice a period: four runs
      // in a period and a half). Two and a half periods tell the two apart whatever a loaded machine
      // did to the first run's start (a run at once, then on the schedule's grid: CI saw 1133 ms).
      expect(runs[3]!.at - runs[0]!.at).toBeGreaterThanOrEqual(2.5 * 400);
      expect(new Set(runs.map((run) => run.label))).toEqual(new Set(['tick']));
      await runner.jobs().stopRepeating(job);
      const count = runs.length;
      await sleep(1_000);
      // At most the one already enqueued when the schedule went.
      expect(runs.length).toBeLessThanOrEqual(count + 1);
    });

    it('delays a job enqueued with delayMs', async () => {
      const job = defineJob<{ enqueuedAt: number }>({ name: uniqueName('delay'), attempts: 1, backoffMs: 20, concurrency: 1 });
      const waited: number[] = [];
      await runner.jobs().process(job, async (data) => {
        waited.push(Date.now() - data.enqueuedAt);
      });
      await runner.jobs().enqueue(job, { enqueuedAt: Date.now() }, { delayMs: 300 });
      await waitFor(() => waited.length === 1, DEADLINE_MS, { message: 'the delayed job' });
      expect(waited[0]).toBeGreaterThanOrEqual(299);
    });

    it('never runs two jobs of a kind at once with concurrency 1', async () => {
      const job = defineJob<{ n: number }>({ name: uniqueName('serial'), attempts: 1, backoffMs: 20, concurrency: 1 });
      let running = 0;
      let maxRunning = 0;
      const done: number[] = [];
      for (let n = 0; n < 6; n++) await runner.jobs().enqueue(job, { n });
      await runner.jobs().process(job, async (data) => {
        running += 1;
        maxRunning = Math.max(maxRunning, running);
        await sleep(30); // hold the slot so that an overlapping job would be seen
        running -= 1;
        done.push(data.n);
      });
      await waitFor(() => done.length === 6, DEADLINE_MS, { message: 'all six jobs' });
      expect(maxRunning).toBe(1);
      expect(done).toEqual([0, 1, 2, 3, 4, 5]);
    });

    it('runs up to `concurrency` jobs of a kind at once and no more', async () => {
      const job = defineJob<{ n: number }>({ name: uniqueName('parallel'), attempts: 1, backoffMs: 20, concurrency: 2 });
      let running = 0;
      let maxRunning = 0;
      let done = 0;
      for (let n = 0; n < 6; n++) await runner.jobs().enqueue(job, { n });
      await runner.jobs().process(job, async () => {
        running += 1;
        maxRunning = Math.max(maxRunning, running);
        // Hold the slot until a second job runs alongside (or briefly, once the queue is nearly empty).
        await waitFor(() => running >= 2 || done >= 5, 2_000).catch(() => undefined);
        await sleep(20);
        running -= 1;
        done += 1;
      });
      await waitFor(() => done === 6, DEADLINE_MS, { message: 'all six jobs' });
      expect(maxRunning).toBe(2);
    });

    it('keeps processing other jobs of a kind while one of them is failing and retrying', async () => {
      const job = defineJob<{ label: string }>({ name: uniqueName('isolated'), attempts: 3, backoffMs: 20, concurrency: 1 });
      const completed: string[] = [];
      await runner.jobs().process(job, async (data) => {
        if (data.label === 'bad') throw new Error('always failing');
        completed.push(data.label);
      });
      await runner.jobs().enqueue(job, { label: 'bad' });
      await runner.jobs().enqueue(job, { label: 'good-1' });
      await runner.jobs().enqueue(job, { label: 'good-2' });
      await waitFor(async () => (await outcomes(job.name)).failed === 1 && completed.length === 2, DEADLINE_MS, {
        message: 'the good jobs and the failure',
      });
      expect(completed.sort()).toEqual(['good-1', 'good-2']);
      expect(await outcomes(job.name)).toEqual({ retried: 2, failed: 1, completed: 2 });
    });
  });
}

for (const runner of RUNNERS) {
  describe(`closing a job runner (${runner.kind})`, () => {
    /** A runner of its own, built as the composition root builds it, so that closing it leaves the shared one alone. */
    const ownRunner = runner.own;

    it('waits for the running job to finish and starts no other', async () => {
      const jobs = ownRunner();
      const job = defineJob<{ n: number }>({ name: uniqueName('close'), attempts: 1, backoffMs: 20, concurrency: 1 });
      const started: number[] = [];
      const finished: number[] = [];
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      await jobs.enqueue(job, { n: 1 });
      await jobs.enqueue(job, { n: 2 });
      await jobs.process(job, async (data) => {
        started.push(data.n);
        if (data.n === 1) await released;
        finished.push(data.n);
      });
      await waitFor(() => started.length === 1, DEADLINE_MS, { message: 'the first job to start' });
      let closed = false;
      const closing = jobs.close().then(() => {
        closed = true;
      });
      await sleep(100);
      expect(closed).toBe(false); // still waiting for the running job
      release();
      await closing;
      expect(finished).toEqual([1]);
      expect(started).toEqual([1]);
    });

    it("stops one kind's processor: its running job finishes, the queued ones wait for the next processor, other kinds go on", async () => {
      const jobs = ownRunner();
      const job = defineJob<{ n: number }>({ name: uniqueName('stop'), attempts: 1, backoffMs: 20, concurrency: 1 });
      const other = defineJob<{ n: number }>({ name: uniqueName('other'), attempts: 1, backoffMs: 20, concurrency: 1 });
      const started: number[] = [];
      const finished: number[] = [];
      const others: number[] = [];
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      try {
        await jobs.enqueue(job, { n: 1 });
        await jobs.enqueue(job, { n: 2 });
        const processor = await jobs.process(job, async (data) => {
          started.push(data.n);
          if (data.n === 1) await released;
          finished.push(data.n);
        });
        await jobs.process(other, async (data) => void others.push(data.n));
        await waitFor(() => started.length === 1, DEADLINE_MS, { message: 'the first job to start' });
        let stopped = false;
        const stopping = processor.stop().then(() => {
          stopped = true;
        });
        await sleep(100);
        expect(stopped).toBe(false); // still waiting for the running job
        release();
        await stopping;
        expect(finished).toEqual([1]);
        await jobs.enqueue(other, { n: 7 });
        await waitFor(() => others.length === 1, DEADLINE_MS, { message: 'the other kind to go on' });
        await sleep(300);
        expect(started).toEqual([1]);
        // The next processor of the kind takes the job left queued.
        const next: number[] = [];
        await jobs.process(job, async (data) => void next.push(data.n));
        await waitFor(() => next.length === 1, DEADLINE_MS, { message: 'the queued job to run on the next processor' });
        expect(next).toEqual([2]);
        expect(others).toEqual([7]);
      } finally {
        release();
        await jobs.close();
      }
    });

    it('leaves no connection or timer of its own open once closed', async () => {
      const sockets = () => process.getActiveResourcesInfo().filter((resource) => resource === 'TCPSocketWrap').length;
      // Sockets of runners closed by earlier tests may still be shutting: start from a settled count.
      let last = -1;
      const before = await waitFor(
        () => {
          const now = sockets();
          const settled = now === last;
          last = now;
          return settled ? { count: now } : undefined;
        },
        5_000,
        { intervalMs: 200, message: 'a settled socket count' },
      ).then(({ count }) => count);
      const jobs = ownRunner();
      const job = defineJob<{ n: number }>({ name: uniqueName('release'), attempts: 2, backoffMs: 20, concurrency: 2 });
      const done: number[] = [];
      await jobs.process(job, async (data) => void done.push(data.n));
      await jobs.enqueue(job, { n: 1 });
      await waitFor(() => done.length === 1, DEADLINE_MS, { message: 'the job' });
      await jobs.close();
      // A leaked client (a Redis connection of a worker) would keep the process alive after shutdown.
      await waitFor(() => sockets() <= before, 5_000, { message: `open sockets back to ${before} (now ${sockets()})` });
    });
  });
}
