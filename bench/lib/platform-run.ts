// One measured run of the whole platform in one process (`node dist-bench/services/main.js`, every
// role), loaded from outside: bench/platform.ts prints it, bench/cluster.ts sets it beside the
// platform as separate processes.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { PROJECT_ROOT } from '#shared/paths.js';
import { serverDatabase } from '#tests/support/fresh-database.js';
import { waitFor } from '#tests/support/wait.js';
import {
  ADMIN,
  BROWSER_UA,
  freePort,
  killAll,
  metricSum,
  seed,
  startProcess,
  storedCounts,
  waitHealthy,
  type Started,
} from '#tests/support/platform-process.js';
import { cannon, onEveryCore } from './load.js';
import { cpuOf, memoryOf, threadsOf, threadsPer, waitQuiet, type Quiet } from './proc.js';

export interface LoadShape {
  seconds: number;
  connections: number;
  /** Redirects per second offered in all (0: as many as the platform answers). */
  rate: number;
}

export interface Figures {
  mode: string;
  answered: number;
  rps: number;
  p50: number;
  p99: number;
  drainS: number;
  cpuUs: number;
  peakRssMb: number;
  /** Start to a healthy `/api/v1/health`, s: on an empty DATA_DIR, and the restart on its data. */
  startS: { first: number; restart: number };
  /** Resident MB (VmRSS) 20 s after each start was healthy, before any load. */
  idleMb: { first: number; restart: number };
  /** Memory at the load's end, MB: resident, V8's heap, buffers outside the heap. */
  memory: { rssMb: number; heapMb: number; externalMb: number };
  /** Inserts into `visits` from the measured load's start until its visits were stored, and their mean size in rows. */
  inserts: number;
  rowsPerInsert: number;
  /** CPU µs per stored visit by thread name, over the same span. */
  threads: [string, number][];
}

/**
 * The environment of a platform process that the load measures rather than refuses: the limiter
 * and burst detection would refuse or reclassify one client's 300 000 visits, so they are off and
 * every visit counts as a person's and is stored.
 */
export const LOAD_ENV = {
  NODE_ENV: 'production',
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
  ADMIN_EMAIL: ADMIN.email,
  ADMIN_PASSWORD: ADMIN.password,
  RATE_LIMIT_REDIRECT: '1000000000:60',
  RATE_LIMIT_API: '1000000:60',
  BURST_MAX_VISITS: '0',
} as const;

/** How long a started process idles before its resident memory is read (issue 37's idle figure). */
const IDLE_MS = 20_000;

/**
 * Starts a server process of a benchmark (startProcess) on every core, whatever core this process
 * pinned itself to for the load: the one process, each cluster process and the bare baseline are
 * placed alike; only autocannon is pinned (to core 1).
 */
export function startOnEveryCore(env: Record<string, string>, command: string[]): Started {
  const started = startProcess(env, command);
  onEveryCore(started.child.pid!);
  return started;
}

/** The compiled entry point the benchmarks start (`bash bench/run.sh` builds it). */
export const ENTRY = join(PROJECT_ROOT, 'dist-bench/services/main.js');

/** How a measurement's start waited for its processes to go quiet (printed by the benchmarks that load the platform). */
export const quietNote = (quiet: Quiet) =>
  quiet.quiet
    ? `quiet ${quiet.waitedS.toFixed(0)} s after the warm-up (the busiest process at ${quiet.percent.toFixed(1)} % of a core over 2 s), then measured`
    : `still at ${quiet.percent.toFixed(1)} % of a core ${quiet.waitedS.toFixed(0)} s after the warm-up: measured anyway`;

/** Inserts into `visits` so far and the rows they held (the enricher's histogram). */
export const insertTotals = async (port: number) => ({
  count: await metricSum(port, 'visits_insert_batch_size_count'),
  rows: await metricSum(port, 'visits_insert_batch_size_sum'),
});

/** `--cpu-prof` into bench-profiles/ when PROFILE=1: each process writes a .cpuprofile when it stops. */
export const profileArgs = () => (process.env.PROFILE === '1' ? ['--cpu-prof', '--cpu-prof-dir', join(PROJECT_ROOT, 'bench-profiles')] : []);

/**
 * One run of the one-process platform: embedded stores, or (`services`) the message log on Kafka,
 * Postgres and Redis of the environment (a database of its own), chDB still in the process. Its
 * DATA_DIR is a new folder under `dataRoot`.
 */
export async function measurePlatform(mode: 'embedded' | 'services', shape: LoadShape, dataRoot = tmpdir()): Promise<Figures> {
  const database = mode === 'services' && process.env.DATABASE_URL ? await serverDatabase(process.env.DATABASE_URL, 'bench_platform') : undefined;
  const dataDir = mkdtempSync(join(dataRoot, 'linktrack-bench-platform-'));
  try {
    return await measure(mode, shape, dataDir, database?.url);
  } finally {
    killAll();
    rmSync(dataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    await database?.drop().catch((error: unknown) => console.error(`the bench's database was not dropped: ${(error as Error).message}`));
  }
}

/** One run on a fresh DATA_DIR (and database, in the services mode): the figures. */
async function measure(
  mode: 'embedded' | 'services',
  { seconds, connections, rate }: LoadShape,
  dataDir: string,
  databaseUrl: string | undefined,
): Promise<Figures> {
  const port = await freePort();
  const stores: Record<string, string> =
    mode === 'embedded'
      ? { DATABASE_URL: '', REDIS_URL: '', KAFKA_BROKERS: '', CLICKHOUSE_URL: '', SECRETS_KEY: '', SECRETS_KEY_PREVIOUS: '' }
      : {
          CLICKHOUSE_URL: '',
          KAFKA_TOPIC_PREFIX: `bench${Date.now()}.`,
          SECRETS_KEY: process.env.SECRETS_KEY || Buffer.alloc(32, 7).toString('base64'),
          ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
        };
  const env = { ...stores, ...LOAD_ENV, DATA_DIR: dataDir, PORT: String(port) };
  // The first start creates the data (PGlite's initdb, both stores' migrations) and seeds it; a
  // platform lives on data made before, so the measured process is a restart on that DATA_DIR. (A
  // first start's process keeps PGlite's initdb memory for its life: its peak is printed too.)
  let startedAt = performance.now();
  const first = startOnEveryCore(env, [ENTRY]);
  let seeded: Awaited<ReturnType<typeof seed>>;
  let firstPeakMb: number;
  const startS = { first: 0, restart: 0 };
  const idleMb = { first: 0, restart: 0 };
  try {
    await waitHealthy(first, { timeoutMs: 120_000 });
    startS.first = (performance.now() - startedAt) / 1000;
    await sleep(IDLE_MS);
    idleMb.first = memoryOf(first.child.pid!, 'VmRSS');
    seeded = await seed(port);
    firstPeakMb = memoryOf(first.child.pid!, 'VmHWM');
    first.child.kill('SIGTERM');
    await first.exited;
  } finally {
    killAll();
  }
  console.log(
    `${mode}: the first start (creating DATA_DIR): healthy after ${startS.first.toFixed(1)} s, ${idleMb.first.toFixed(0)} MB resident ${IDLE_MS / 1000} s later, peaked at ${firstPeakMb.toFixed(0)} MB resident`,
  );
  startedAt = performance.now();
  const server = startOnEveryCore(env, [...profileArgs(), ENTRY]);
  const pid = server.child.pid!;
  // Resident memory through the run, by phase: where the peak comes from.
  let phase = 'start';
  const peakByPhase = new Map<string, number>();
  const peakOf = { anon: 0, file: 0 };
  const sampler = setInterval(() => {
    try {
      const mb = memoryOf(pid, 'VmRSS'); // NaN once the process is a zombie (no memory lines)
      if (!Number.isNaN(mb)) peakByPhase.set(phase, Math.max(peakByPhase.get(phase) ?? 0, mb));
      peakOf.anon = Math.max(peakOf.anon, memoryOf(pid, 'RssAnon') || 0);
      peakOf.file = Math.max(peakOf.file, memoryOf(pid, 'RssFile') || 0);
    } catch {
      // the process has exited
    }
  }, 200);
  try {
    await waitHealthy(server, { timeoutMs: 120_000 });
    startS.restart = (performance.now() - startedAt) / 1000;
    phase = 'idle';
    await sleep(IDLE_MS);
    idleMb.restart = memoryOf(pid, 'VmRSS');
    console.log(`${mode}: the restart: healthy after ${startS.restart.toFixed(1)} s, ${idleMb.restart.toFixed(0)} MB resident ${IDLE_MS / 1000} s later`);
    const url = `http://127.0.0.1:${port}/${seeded.slug}`;
    const headers = { host: seeded.host, 'user-agent': BROWSER_UA };
    // Warm-up: the JIT and the caches, then every warm-up visit stored before the measured load.
    phase = 'warm-up';
    const warm = await cannon(url, { durationSec: 3, connections, headers, expectStatus: 302 });
    await waitStored(port, seeded, warm.total, 120_000);
    // The span starts once the warm-up's merges are done, as the cluster's does (waitQuiet).
    const settled = await waitQuiet([pid]);
    console.log(`${mode}: ${quietNote(settled)}`);

    const insertsBefore = await insertTotals(port);
    const cpuBefore = cpuOf(pid);
    const threadsBefore = threadsOf(pid);
    const started = performance.now();
    phase = 'load';
    const measured = await cannon(url, { durationSec: seconds, connections, headers, expectStatus: 302, ...(rate > 0 ? { rate } : {}) });
    const loadEnded = performance.now();
    // Where the memory is at the load's end: V8's heap, buffers outside it, and the rest (chDB, LMDB's map, code).
    const heapMb = (await metricSum(port, 'nodejs_heap_size_total_bytes')) / 1_048_576;
    const externalMb = (await metricSum(port, 'nodejs_external_memory_bytes')) / 1_048_576;
    const rssMb = memoryOf(pid, 'VmRSS');
    phase = 'drain';
    const answered = warm.total + measured.total;
    // Since the restart, the enricher inserted the warm-up's visits and the load's.
    await waitInserted(port, answered, 300_000);
    const drainS = (performance.now() - loadEnded) / 1000;
    const cpuUs = (cpuOf(pid) - cpuBefore) / measured.total;
    const threads = threadsPer(threadsBefore, threadsOf(pid), measured.total);
    const insertsAfter = await insertTotals(port);
    const stored = await settledStored(port, seeded);
    // autocannon stops with a request in flight on each connection: the server answers and stores
    // those too, but autocannon does not count them. Stored is what was counted, plus at most those.
    const inFlight = 2 * connections;
    if (stored.rows !== stored.rollups || stored.rows < answered || stored.rows > answered + inFlight) {
      throw new Error(
        `answered ${answered} redirects (+ at most ${inFlight} in flight at the stops), stored ${stored.rows} rows and ${stored.rollups} in the rollups`,
      );
    }
    const figures: Figures = {
      mode,
      answered: measured.total,
      rps: measured.total / ((loadEnded - started) / 1000),
      p50: measured.p50,
      p99: measured.p99,
      drainS,
      cpuUs,
      peakRssMb: memoryOf(pid, 'VmHWM'),
      startS,
      idleMb,
      threads,
      inserts: 0,
      rowsPerInsert: 0,
      memory: { rssMb, heapMb, externalMb },
    };
    figures.inserts = insertsAfter.count - insertsBefore.count;
    figures.rowsPerInsert = (insertsAfter.rows - insertsBefore.rows) / Math.max(1, figures.inserts);
    server.child.kill('SIGTERM');
    await server.exited;
    return figures;
  } catch (error) {
    throw new Error(`${mode}: ${(error as Error).message}\n${server.output().split('\n').slice(-30).join('\n')}`, { cause: error });
  } finally {
    clearInterval(sampler);
    if (peakByPhase.size > 0) console.log(`${mode}: peak resident MB by phase: ${[...peakByPhase].map(([name, mb]) => `${name} ${mb.toFixed(0)}`).join(', ')}`);
    if (peakOf.anon > 0)
      console.log(
        `${mode}: peak resident MB by kind (sampled every 200 ms): the process's own memory (RssAnon) ${peakOf.anon.toFixed(0)}, mapped files (RssFile: libchdb.so's code above all) ${peakOf.file.toFixed(0)}`,
      );
  }
}

/**
 * Waits until the enricher has inserted `visits` visits since it started (its `visits_inserted_total`):
 * the end of a measured span. The metric, not ClickHouse: reading the visit list and the report
 * every 100 ms (waitStored) put the bench's own queries into the span for as long as a backlog
 * drained, 35 s in a cluster run as fast as answered, where the one process drains in 1 to 2 s.
 * What was stored is checked after the span, from ClickHouse.
 */
export async function waitInserted(port: number, visits: number, timeoutMs: number): Promise<void> {
  await waitFor(async () => (await metricSum(port, 'visits_inserted_total')) >= visits, timeoutMs, {
    intervalMs: 200,
    message: `${visits} visits answered, all inserted`,
  });
}

/** Waits until the owner's report and visit list both count `visits` (both are read: rows, then the rollups). */
export async function waitStored(port: number, seeded: { token: string; linkId: string }, visits: number, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const stored = await storedCounts(port, seeded.token, seeded.linkId);
    if (stored.rows >= visits && stored.rollups >= visits) return;
    if (performance.now() > deadline)
      throw new Error(`${visits} visits answered, ${stored.rows} stored (${stored.rollups} in the rollups) after ${timeoutMs / 1000} s`);
    await sleep(100);
  }
}

/**
 * The stored counts once they stand still: rows and rollups read twice, 300 ms apart, the same. The
 * rows and the rollups are two reads, so a visit in flight at the load's end (answered, not counted
 * by autocannon) could land between them and tell rows and rollups apart for nothing.
 */
async function settledStored(port: number, seeded: { token: string; linkId: string }, timeoutMs = 30_000): Promise<{ rows: number; rollups: number }> {
  const deadline = performance.now() + timeoutMs;
  let last = await storedCounts(port, seeded.token, seeded.linkId);
  for (;;) {
    await sleep(300);
    const now = await storedCounts(port, seeded.token, seeded.linkId);
    if ((now.rows === last.rows && now.rollups === last.rollups && now.rows === now.rollups) || performance.now() > deadline) return now;
    last = now;
  }
}

/** The bare baseline's figures under one load shape: server CPU per request (from /proc, as the platform's) and latency. */
export interface BareFigures {
  answered: number;
  rps: number;
  p50: number;
  p99: number;
  cpuUs: number;
}

/**
 * The bare Fastify 302 (lib/bare-server.ts) under the platform's load shape: started as the
 * platform is (node on the compiled code, on every core), warmed up for 3 s, then loaded for the
 * same seconds, connections and rate; its CPU time (every thread, from /proc) over the requests
 * answered is the baseline of CPU per stored visit.
 */
export async function measureBare({ seconds, connections, rate }: LoadShape): Promise<BareFigures> {
  const port = await freePort();
  const server = startOnEveryCore({ PORT: String(port) }, [join(PROJECT_ROOT, 'dist-bench/bench/lib/bare-server.js')]);
  const pid = server.child.pid!;
  try {
    await waitHealthy(server, { timeoutMs: 30_000 });
    const url = `http://127.0.0.1:${port}/load`;
    const headers = { host: 'bare.localhost', 'user-agent': BROWSER_UA };
    await cannon(url, { durationSec: 3, connections, headers, expectStatus: 302 });
    const cpuBefore = cpuOf(pid);
    const started = performance.now();
    const measured = await cannon(url, { durationSec: seconds, connections, headers, expectStatus: 302, ...(rate > 0 ? { rate } : {}) });
    const cpuUs = (cpuOf(pid) - cpuBefore) / measured.total;
    const rps = measured.total / ((performance.now() - started) / 1000);
    return { answered: measured.total, rps, p50: measured.p50, p99: measured.p99, cpuUs };
  } catch (error) {
    throw new Error(`bare baseline: ${(error as Error).message}\n${server.output().split('\n').slice(-20).join('\n')}`, { cause: error });
  } finally {
    killAll();
  }
}
