import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { open } from 'lmdb';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../logger.js';
import { createMetrics, type Metrics } from '../metrics.js';
import { uniqueName } from '#tests/support/context.js';
import { waitFor } from '#tests/support/wait.js';
import { JOB_ID_RETENTION_MS, defineJob, type JobContext, type Jobs } from './jobs.js';
import { CRASH_JOB } from './lmdb.child.js';
import { createLmdbJobs } from './lmdb.js';

// The restart tests of the one-process mode's job runner: each closes (or kills) a runner and opens
// another on the same folder, as a restarted process does. The in-memory runner these replace lost
// every queued job and pending retry at a restart (issue 24: "a webhook that had 3 of 5 attempts
// before a restart never got the other 2"); every test here failed on it.

const DEADLINE_MS = 10_000;
const CHILD = join(dirname(fileURLToPath(import.meta.url)), 'lmdb.child.ts');
const root = mkdtempSync(join(tmpdir(), 'linktrack-test-jobs-'));
const log = createLogger({ logLevel: 'silent' });
const opened = new Set<Jobs>();

/** A fresh folder for one test's runners. */
const folder = () => mkdtempSync(join(root, 'run-'));

/** Opens a runner on `dir`, as a (re)started process does; closed after the test if the test did not. */
function openRunner(dir: string, metrics: Metrics = createMetrics()): Jobs {
  const jobs = createLmdbJobs(log, metrics, { dir });
  opened.add(jobs);
  return jobs;
}

async function closeRunner(jobs: Jobs): Promise<void> {
  opened.delete(jobs);
  await jobs.close();
}

async function outcomes(metrics: Metrics, job: string): Promise<Record<string, number>> {
  const metric = await metrics.jobsProcessed.get();
  return Object.fromEntries(metric.values.filter((value) => value.labels.job === job).map((value) => [String(value.labels.outcome), value.value]));
}

/** Starts lmdb.child.ts on `dir` and resolves once it printed a line starting with `line`; the caller kills it. */
async function child(dir: string, args: string[], line: string) {
  const process_ = spawn(process.execPath, ['--import', 'tsx', CHILD, dir, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  process_.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  process_.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<NodeJS.Signals | null>((resolve) => process_.once('exit', (_code, signal) => resolve(signal)));
  await waitFor(() => stdout.split('\n').some((printed) => printed.startsWith(line)), 20_000, {
    message: `the child to print "${line}" (stderr: ${stderr.slice(-500)})`,
  });
  return {
    stdout: () => stdout,
    /** SIGKILL: no close, no flush, no exit handler, as an OOM kill or a power cut of the process. */
    async kill() {
      process_.kill('SIGKILL');
      expect(await exited).toBe('SIGKILL');
    },
  };
}

afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all([...opened].map((jobs) => jobs.close()));
  opened.clear();
});

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

describe('the LMDB job runner across restarts', () => {
  it('runs a job waiting for its retry after a restart, as its next attempt and not before its backoff', async () => {
    const dir = folder();
    const job = defineJob<{ key: string }>({ name: uniqueName('retry'), attempts: 3, backoffMs: 600, concurrency: 1 });
    const metrics = createMetrics();
    const first = openRunner(dir, metrics);
    const failedAt: number[] = [];
    await first.process(job, async (_data, { attempt }) => {
      failedAt.push(Date.now());
      throw new Error(`receiver down (attempt ${attempt})`);
    });
    await first.enqueue(job, { key: 'k' }, { jobId: 'delivery-1' });
    await waitFor(async () => (await outcomes(metrics, job.name)).retried === 1, DEADLINE_MS, { message: 'the first failure' });
    // Restarted while attempt 2 waits for its backoff.
    await closeRunner(first);
    expect(failedAt).toHaveLength(1);

    const second = openRunner(dir);
    const attempts: (JobContext & { at: number; data: unknown })[] = [];
    await second.process(job, async (data, context) => {
      attempts.push({ ...context, data, at: Date.now() });
    });
    await waitFor(() => attempts.length === 1, DEADLINE_MS, { message: 'attempt 2 after the restart' });
    expect(attempts[0]).toMatchObject({ id: 'delivery-1', attempt: 2, final: false, data: { key: 'k' } });
    // The backoff's low end (-20 % jitter) counted from the failure, not from the restart.
    expect(attempts[0]!.at - failedAt[0]!).toBeGreaterThanOrEqual(600 * 0.8 - 1);
    await sleep(200);
    expect(attempts).toHaveLength(1);
  });

  it('runs the last attempts of a job whose attempts span several restarts, marking only the last final', async () => {
    const dir = folder();
    // Backoffs far longer than a poll of waitFor: with 30 ms, a loaded CI run's next attempt came due
    // before the poll saw the one before, started, and ran while the runner closed, so the attempts
    // fell one restart early and the last start found nothing left to run.
    const job = defineJob<{ key: string }>({ name: uniqueName('span'), attempts: 3, backoffMs: 500, concurrency: 1 });
    const seen: JobContext[] = [];
    for (let restart = 0; restart < 3; restart++) {
      const jobs = openRunner(dir);
      const before = seen.length;
      await jobs.process(job, async (_data, context) => {
        seen.push(context);
        throw new Error('receiver down');
      });
      if (restart === 0) await jobs.enqueue(job, { key: 'k' }, { jobId: 'delivery-2' });
      await waitFor(() => seen.length === before + 1, DEADLINE_MS, { message: `attempt ${restart + 1}` });
      await closeRunner(jobs);
    }
    expect(seen.map(({ attempt, final }) => ({ attempt, final }))).toEqual([
      { attempt: 1, final: false },
      { attempt: 2, final: false },
      { attempt: 3, final: true },
    ]);
    // Failed for good: a fourth start runs nothing.
    const last = openRunner(dir);
    await last.process(job, async (_data, context) => void seen.push(context));
    await sleep(300);
    expect(seen).toHaveLength(3);
  });

  it('runs the jobs queued before a restart after it, in their order and with their data', async () => {
    const dir = folder();
    const job = defineJob<{ n: number }>({ name: uniqueName('queued'), attempts: 1, backoffMs: 20, concurrency: 1 });
    const first = openRunner(dir);
    for (let n = 0; n < 5; n++) await first.enqueue(job, { n });
    await first.enqueueMany(job, [{ data: { n: 5 } }, { data: { n: 6 }, jobId: 'seven' }]);
    await closeRunner(first);

    const second = openRunner(dir);
    expect(await second.waiting(job)).toBe(7);
    const seen: number[] = [];
    await second.process(job, async (data) => void seen.push(data.n));
    await waitFor(() => seen.length === 7, DEADLINE_MS, { message: 'the seven queued jobs' });
    expect(seen).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it('keeps a delayed job delayed across a restart', async () => {
    const dir = folder();
    const job = defineJob<{ n: number }>({ name: uniqueName('delayed'), attempts: 1, backoffMs: 20, concurrency: 1 });
    const first = openRunner(dir);
    const enqueuedAt = Date.now();
    await first.enqueue(job, { n: 1 }, { delayMs: 700 });
    await closeRunner(first);
    const second = openRunner(dir);
    const ranAt: number[] = [];
    await second.process(job, async () => void ranAt.push(Date.now()));
    expect(await second.waiting(job)).toBe(0); // delayed, not ready
    await waitFor(() => ranAt.length === 1, DEADLINE_MS, { message: 'the delayed job' });
    expect(ranAt[0]! - enqueuedAt).toBeGreaterThanOrEqual(699);
  });

  it('keeps deduplicating the ids of jobs finished before a restart', async () => {
    const dir = folder();
    const job = defineJob<{ label: string }>({ name: uniqueName('dedup'), attempts: 1, backoffMs: 20, concurrency: 1 });
    const metrics = createMetrics();
    const first = openRunner(dir, metrics);
    const seen: string[] = [];
    await first.process(job, async (data) => void seen.push(data.label));
    await first.enqueue(job, { label: 'first' }, { jobId: 'event-1' });
    await waitFor(async () => (await outcomes(metrics, job.name)).completed === 1, DEADLINE_MS, { message: 'the first job' });
    await closeRunner(first);

    const second = openRunner(dir);
    await second.enqueue(job, { label: 'redelivered' }, { jobId: 'event-1' });
    await second.enqueue(job, { label: 'sentinel' });
    await second.process(job, async (data) => void seen.push(data.label));
    await waitFor(() => seen.includes('sentinel'), DEADLINE_MS, { message: 'the sentinel' });
    expect(seen).toEqual(['first', 'sentinel']);
  });

  it('lets a finished id go once its retention has passed, on disk too', async () => {
    const dir = folder();
    const job = defineJob<{ label: string }>({ name: uniqueName('expire'), attempts: 1, backoffMs: 20, concurrency: 1 });
    const metrics = createMetrics();
    const first = openRunner(dir, metrics);
    const seen: string[] = [];
    await first.process(job, async (data) => void seen.push(data.label));
    await first.enqueue(job, { label: 'first' }, { jobId: 'event-2' });
    await waitFor(async () => (await outcomes(metrics, job.name)).completed === 1, DEADLINE_MS, { message: 'the first job' });
    await closeRunner(first);

    // The next start comes after the retention of completed ids: it prunes them as it opens.
    const now = Date.now.bind(Date);
    vi.spyOn(Date, 'now').mockImplementation(() => now() + JOB_ID_RETENTION_MS.completed + 60_000);
    const second = openRunner(dir);
    await second.process(job, async (data) => void seen.push(data.label));
    await second.enqueue(job, { label: 'again' }, { jobId: 'event-2' });
    await waitFor(() => seen.includes('again'), DEADLINE_MS, { message: 'the job with the expired id' });
    await closeRunner(second);
    vi.restoreAllMocks();
    expect(await entries(dir)).toEqual({ states: 0, payloads: 0, finished: 1, expiries: 1, 'finish-order': 1 });
  });

  it('deletes finished jobs from disk and keeps at most twice retainFinished ids of a kind', async () => {
    const dir = folder();
    const job = defineJob<{ n: number }>({ name: uniqueName('bounded'), attempts: 2, backoffMs: 10, concurrency: 4, retainFinished: 5 });
    const metrics = createMetrics();
    const jobs = openRunner(dir, metrics);
    await jobs.process(job, async (data, { attempt }) => {
      if (data.n % 3 === 0 && attempt === 1) throw new Error('one retry for some');
    });
    for (let n = 0; n < 40; n++) await jobs.enqueue(job, { n }, { jobId: `bounded-${n}` });
    await waitFor(async () => (await outcomes(metrics, job.name)).completed === 40, DEADLINE_MS, { message: 'all forty jobs' });
    await closeRunner(jobs);
    const counts = await entries(dir);
    expect(counts).toMatchObject({ states: 0, payloads: 0 });
    expect(counts.finished).toBeGreaterThanOrEqual(5);
    expect(counts.finished).toBeLessThanOrEqual(10);
    expect(counts.expiries).toBe(counts.finished);
    expect(counts['finish-order']).toBe(counts.finished);
  });

  it("keeps a schedule's time across a restart: the restarted process does not run it early", async () => {
    const dir = folder();
    const everyMs = 1_500;
    const job = defineJob<{ label: string }>({ name: uniqueName('repeat'), attempts: 1, backoffMs: 20, concurrency: 1 });
    const runs: number[] = [];
    const first = openRunner(dir);
    await first.process(job, async () => void runs.push(Date.now()));
    const declared = Date.now();
    await first.repeat(job, { label: 'tick' }, everyMs);
    await waitFor(() => runs.length === 1, DEADLINE_MS, { message: 'the first run' });
    await closeRunner(first);

    const second = openRunner(dir);
    await second.process(job, async () => void runs.push(Date.now()));
    await second.repeat(job, { label: 'tick' }, everyMs);
    await waitFor(() => runs.length === 2, DEADLINE_MS, { message: 'the second run' });
    // One period after the declaration (less BullMQ-like tolerance for timer rounding), not at the restart.
    expect(runs[1]! - declared).toBeGreaterThanOrEqual(everyMs - 20);
    expect(runs[1]! - declared).toBeLessThan(everyMs + 1_000);
    await second.stopRepeating(job);
  });

  it('runs a schedule that fell due while no process ran once at start, not once per missed period', async () => {
    const dir = folder();
    const everyMs = 300;
    const job = defineJob<{ label: string }>({ name: uniqueName('missed'), attempts: 1, backoffMs: 20, concurrency: 1 });
    const first = openRunner(dir);
    await first.repeat(job, { label: 'tick' }, everyMs);
    await closeRunner(first);
    // The run enqueued at the declaration waits on disk; three periods pass without a process.
    await sleep(3 * everyMs + 100);
    const second = openRunner(dir);
    const started = Date.now();
    /** The due time of each run, from its id (a schedule's run is named after its due time). */
    const dueTimes: number[] = [];
    await second.process(job, async (_data, { id }) => void dueTimes.push(Number(id.split(':every:')[1])));
    await second.repeat(job, { label: 'tick' }, everyMs);
    await waitFor(() => dueTimes.length >= 3, DEADLINE_MS, { message: 'three runs' });
    await second.stopRepeating(job);
    // The declaration's run (queued before the restart), one run for the missed periods (the first
    // missed slot), then the slots after the restart: the other missed ones are not made up.
    expect(dueTimes[1]! - dueTimes[0]!).toBe(everyMs);
    expect(dueTimes[1]!).toBeLessThan(started);
    for (const due of dueTimes.slice(2)) expect(due).toBeGreaterThan(started);
  });

  it('starts a schedule over when it is declared again with another period', async () => {
    const dir = folder();
    const job = defineJob<{ label: string }>({ name: uniqueName('period'), attempts: 1, backoffMs: 20, concurrency: 1 });
    const runs: string[] = [];
    const first = openRunner(dir);
    await first.process(job, async (data) => void runs.push(data.label));
    await first.repeat(job, { label: 'hourly' }, 3_600_000);
    await waitFor(() => runs.length === 1, DEADLINE_MS, { message: 'the first run' });
    await closeRunner(first);
    const second = openRunner(dir);
    await second.process(job, async (data) => void runs.push(data.label));
    await second.repeat(job, { label: 'every second' }, 1_000);
    await waitFor(() => runs.length === 2, DEADLINE_MS, { message: 'the run of the new schedule' });
    expect(runs).toEqual(['hourly', 'every second']);
    await second.stopRepeating(job);
  });

  it('forgets a removed schedule across a restart', async () => {
    const dir = folder();
    const job = defineJob<{ label: string }>({ name: uniqueName('removed'), attempts: 1, backoffMs: 20, concurrency: 1 });
    const first = openRunner(dir);
    await first.repeat(job, { label: 'tick' }, 200);
    await first.stopRepeating(job);
    await closeRunner(first);
    const second = openRunner(dir);
    const runs: number[] = [];
    await second.process(job, async () => void runs.push(Date.now()));
    await waitFor(() => runs.length === 1, DEADLINE_MS, { message: 'the run enqueued before the removal' });
    await sleep(600);
    expect(runs).toHaveLength(1);
  });
});

describe('the LMDB job runner refusing what it cannot keep', () => {
  it('refuses data JSON cannot hold before writing anything, and stays healthy', async () => {
    const dir = folder();
    const job = defineJob<{ n: unknown }>({ name: uniqueName('refused'), attempts: 1, backoffMs: 20, concurrency: 1 });
    const metrics = createMetrics();
    const jobs = openRunner(dir, metrics);
    await expect(jobs.enqueue(job, { n: 1n }, { jobId: 'big' })).rejects.toThrow(TypeError);
    await expect(
      jobs.enqueueMany(job, [
        { data: { n: 1 }, jobId: 'fine' },
        { data: { n: 2n }, jobId: 'big' },
      ]),
    ).rejects.toThrow(TypeError);
    await expect(jobs.ping()).resolves.toBeUndefined();
    expect((await metrics.jobsStoreFailures.get()).values).toEqual([]);
    // Nothing of the refused calls was kept: their ids are free.
    const seen: unknown[] = [];
    await jobs.process(job, async (data) => void seen.push(data.n));
    await jobs.enqueue(job, { n: 'big' }, { jobId: 'big' });
    await jobs.enqueue(job, { n: 'fine' }, { jobId: 'fine' });
    await waitFor(() => seen.length === 2, DEADLINE_MS, { message: 'the two jobs' });
    expect(seen).toEqual(['big', 'fine']);
  });

  it('refuses enqueues once closed', async () => {
    const jobs = openRunner(folder());
    await closeRunner(jobs);
    const job = defineJob<{ n: number }>({ name: uniqueName('closed'), attempts: 1, backoffMs: 20, concurrency: 1 });
    await expect(jobs.enqueue(job, { n: 1 })).rejects.toThrow('closed');
    await expect(jobs.ping()).rejects.toThrow('closed');
  });
});

describe('the LMDB job runner after a process is killed (SIGKILL)', () => {
  it('keeps every job whose enqueue had resolved', async () => {
    const dir = folder();
    const killed = await child(dir, ['enqueue', '200'], 'enqueued');
    await killed.kill();
    const jobs = openRunner(dir);
    const seen = new Set<number>();
    await jobs.process(CRASH_JOB, async (data) => void seen.add(data.n));
    await waitFor(() => seen.size === 200, DEADLINE_MS, { message: `the 200 jobs (${seen.size} so far)` });
    expect([...seen].sort((a, b) => a - b)).toEqual(Array.from({ length: 200 }, (_, n) => n));
  });

  it('runs a job that was running when the process died again, as the same attempt, and fails it for good when it dies twice', async () => {
    const dir = folder();
    const firstRun = await child(dir, ['hang'], 'started crash-0');
    expect(firstRun.stdout()).toContain('started crash-0 1');
    await firstRun.kill();

    // Run again as attempt 1 (the handler may not have got far): here the next process dies too.
    const secondRun = await child(dir, ['hang'], 'started crash-0');
    expect(secondRun.stdout()).toContain('started crash-0 1');
    await secondRun.kill();

    // Found running a second time (BullMQ's maxStalledCount, 1): failed for good, not run again,
    // and its id still deduplicates.
    const metrics = createMetrics();
    const jobs = openRunner(dir, metrics);
    const seen: JobContext[] = [];
    await jobs.process(CRASH_JOB, async (_data, context) => void seen.push(context));
    await jobs.enqueue(CRASH_JOB, { n: 0 }, { jobId: 'crash-0' });
    await jobs.enqueue(CRASH_JOB, { n: 1 }, { jobId: 'sentinel' });
    await waitFor(() => seen.some((context) => context.id === 'sentinel'), DEADLINE_MS, { message: 'the sentinel' });
    expect(seen.map((context) => context.id)).toEqual(['sentinel']);
    expect((await outcomes(metrics, CRASH_JOB.name)).failed).toBe(1);
    await closeRunner(jobs);
    expect(await entries(dir)).toMatchObject({ states: 0, payloads: 0 });
  });

  it('completes a job that was running when the process died in the next process', async () => {
    const dir = folder();
    const killed = await child(dir, ['hang'], 'started crash-0');
    await killed.kill();
    const jobs = openRunner(dir);
    const seen: (JobContext & { data: unknown })[] = [];
    await jobs.process(CRASH_JOB, async (data, context) => void seen.push({ ...context, data }));
    await waitFor(() => seen.length === 1, DEADLINE_MS, { message: 'the interrupted job' });
    expect(seen[0]).toMatchObject({ id: 'crash-0', attempt: 1, final: false, data: { n: 0 } });
  });
});

/** Entries of each table of a closed runner's folder. */
async function entries(dir: string): Promise<Record<string, number>> {
  const db = open({ path: dir, maxDbs: 8, readOnly: true });
  try {
    return Object.fromEntries(['states', 'payloads', 'finished', 'expiries', 'finish-order'].map((name) => [name, db.openDB({ name }).getKeysCount()]));
  } finally {
    await db.close();
  }
}
