// The whole platform as `make run` starts it — one process, every role, embedded stores — loaded from
// outside: what a stored visit costs in server CPU, end to end (redirect, publish, enrich, store).
//   bash bench/run.sh platform [seconds] [connections] [rate]
// With KAFKA_BROKERS (and DATABASE_URL, REDIS_URL) in the environment (`source .services/env`), a
// second run does the same on those services: the message log on Kafka, chDB still in the process.
//
// Each run starts `node dist-bench/services/main.js` on a fresh DATA_DIR, seeds an owner, a
// subdomain and a link through the API, stops it and starts it again on that data (the measured
// process: a platform restarted on its data, as every one but the first start is), warms up, then autocannon (a separate process) sends
// redirects for `seconds` with a browser's user agent. The server's CPU time (user + system of its
// every thread, from /proc) is read from the load's start until every answered redirect is counted
// in the owner's report (rows and rollups): CPU per stored visit is that over the visits stored.
// Peak RSS is the kernel's high-water mark of the process (VmHWM), over its whole life.
// Targets (issue 25): ≤ 40 µs of server CPU per stored visit, ≤ 600 MB peak RSS, redirect p99 ≤ 10 ms.
// PROFILE=1 adds --cpu-prof: the server writes a .cpuprofile into bench-profiles/ when it stops.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { PROJECT_ROOT } from '#shared/paths.js';
import { serverDatabase } from '#tests/support/fresh-database.js';
import { ADMIN, BROWSER_UA, freePort, killAll, metricSum, seed, startProcess, storedCounts, waitHealthy } from '#tests/support/platform-process.js';
import { cannon, otherLoad, pad } from './lib/load.js';

const seconds = Number(process.argv[2] ?? 20);
const connections = Number(process.argv[3] ?? 50);
/** Redirects per second offered (0: as many as the platform answers), for comparing builds at one load. */
const rate = Number(process.argv[4] ?? 0);
if (!Number.isInteger(seconds) || seconds < 1 || !Number.isInteger(connections) || connections < 1 || !Number.isInteger(rate) || rate < 0) {
  console.error('usage: bash bench/run.sh platform [seconds ≥ 1] [connections ≥ 1] [redirects/s, 0: as fast as answered]');
  process.exit(1);
}
const TARGETS = { cpuUs: 40, rssMb: 600, p99Ms: 10 };
const CLOCK_TICKS = 100; // USER_HZ: /proc/<pid>/stat counts CPU time in 1/100 s on Linux

/** User + system CPU time of a process and all its threads so far, µs. */
function cpuOf(pid: number): number {
  return cpuOfStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
}
/** User and/or system CPU time (µs) in a `/proc/…/stat` line (fields 14 and 15, after the command's parenthesis). */
function cpuOfStat(stat: string, part: 'user' | 'system' | 'both' = 'both'): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = (part === 'system' ? 0 : Number(fields[11])) + (part === 'user' ? 0 : Number(fields[12]));
  return (ticks * 1e6) / CLOCK_TICKS;
}
/**
 * CPU time (µs) of each thread of a process so far, summed by thread name: the event loop, Node's
 * helpers (V8's GC and compiler threads, libuv's pool), chDB's (ClickHouse's) threads, …
 */
function threadsOf(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    // The event loop's thread is the process's own id; Node's other threads (V8's GC and compiler
    // helpers, libuv's pool) carry the process's name.
    const named =
      stat
        .slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
        .replace(/[\d:]+$/, '')
        .replace(/\s+$/, '') || '?';
    if (tid === String(pid)) {
      // The event loop's system time is mostly the kernel's loopback TCP: its socket writes carry
      // the answer through both ends' TCP stacks (a real network card takes part of that off).
      byName.set('event loop (user)', cpuOfStat(stat, 'user'));
      byName.set('event loop (kernel)', cpuOfStat(stat, 'system'));
      continue;
    }
    const name = named === 'node' ? 'node helpers' : named;
    byName.set(name, (byName.get(name) ?? 0) + cpuOfStat(stat));
  }
  return byName;
}

/**
 * A line of /proc/<pid>/status in MB (VmHWM: peak resident set; VmRSS: now; RssAnon: the part of
 * VmRSS that is the process's own memory; RssFile: mapped files' pages, chiefly the code of
 * libchdb.so, clean pages the kernel may drop and reread).
 */
function memoryOf(pid: number, field: 'VmHWM' | 'VmRSS' | 'RssAnon' | 'RssFile'): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : NaN;
}

interface Figures {
  mode: string;
  answered: number;
  rps: number;
  p50: number;
  p99: number;
  drainS: number;
  cpuUs: number;
  peakRssMb: number;
  /** Memory at the load's end, MB: resident, V8's heap, buffers outside the heap. */
  memory: { rssMb: number; heapMb: number; externalMb: number };
  /** Inserts into `visits` over the process's life, and their mean size in rows. */
  inserts: number;
  rowsPerInsert: number;
  /** CPU µs per stored visit by thread name, over the same span. */
  threads: [string, number][];
}

async function run(mode: 'embedded' | 'services'): Promise<Figures> {
  const database = mode === 'services' && process.env.DATABASE_URL ? await serverDatabase(process.env.DATABASE_URL, 'bench_platform') : undefined;
  const dataDir = mkdtempSync(join(tmpdir(), 'linktrack-bench-platform-'));
  try {
    return await measure(mode, dataDir, database?.url);
  } finally {
    killAll();
    rmSync(dataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    await database?.drop().catch((error: unknown) => console.error(`the bench's database was not dropped: ${(error as Error).message}`));
  }
}

/** One run on a fresh DATA_DIR (and database, in the services mode): the figures. */
async function measure(mode: 'embedded' | 'services', dataDir: string, databaseUrl: string | undefined): Promise<Figures> {
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
  const env = {
    ...stores,
    NODE_ENV: 'production',
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
    // The limiter and burst detection would refuse or reclassify one client's 300 000 visits: off, so
    // the load measures the platform (every visit counts as a person's and is stored).
    RATE_LIMIT_REDIRECT: '1000000000:60',
    RATE_LIMIT_API: '1000000:60',
    BURST_MAX_VISITS: '0',
  };
  const entry = join(PROJECT_ROOT, 'dist-bench/services/main.js');
  // The first start creates the data (PGlite's initdb, both stores' migrations) and seeds it; a
  // platform lives on data made before, so the measured process is a restart on that DATA_DIR. (A
  // first start's process keeps PGlite's initdb memory for its life: its peak is printed too.)
  const first = startProcess(env, [entry]);
  let seeded: Awaited<ReturnType<typeof seed>>;
  let firstPeakMb: number;
  try {
    await waitHealthy(first, { timeoutMs: 120_000 });
    seeded = await seed(port);
    firstPeakMb = memoryOf(first.child.pid!, 'VmHWM');
    first.child.kill('SIGTERM');
    await first.exited;
  } finally {
    killAll();
  }
  console.log(`${mode}: the first start (creating DATA_DIR) peaked at ${firstPeakMb.toFixed(0)} MB resident`);
  const profile = process.env.PROFILE === '1' ? ['--cpu-prof', '--cpu-prof-dir', join(PROJECT_ROOT, 'bench-profiles')] : [];
  const server = startProcess(env, [...profile, entry]);
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
    const url = `http://127.0.0.1:${port}/${seeded.slug}`;
    const headers = { host: seeded.host, 'user-agent': BROWSER_UA };
    // Warm-up: the JIT and the caches, then every warm-up visit stored before the measured load.
    phase = 'warm-up';
    const warm = await cannon(url, { durationSec: 3, connections, headers, expectStatus: 302 });
    await waitStored(port, seeded, warm.total, 120_000);

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
    await waitStored(port, seeded, answered, 300_000);
    const drainS = (performance.now() - loadEnded) / 1000;
    const cpuUs = (cpuOf(pid) - cpuBefore) / measured.total;
    const threads = [...threadsOf(pid)]
      .map(([name, us]): [string, number] => [name, (us - (threadsBefore.get(name) ?? 0)) / measured.total])
      .filter(([, us]) => us >= 0.05)
      .sort((a, b) => b[1] - a[1]);
    const stored = await storedCounts(port, seeded.token, seeded.linkId);
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
      threads,
      inserts: 0,
      rowsPerInsert: 0,
      memory: { rssMb, heapMb, externalMb },
    };
    const inserts = await metricSum(port, 'visits_insert_batch_size_count');
    figures.inserts = inserts;
    figures.rowsPerInsert = (await metricSum(port, 'visits_insert_batch_size_sum')) / Math.max(1, inserts);
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

/** Waits until the owner's report and visit list both count `visits` (both are read: rows, then the rollups). */
async function waitStored(port: number, seeded: Awaited<ReturnType<typeof seed>>, visits: number, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const stored = await storedCounts(port, seeded.token, seeded.linkId);
    if (stored.rows >= visits && stored.rollups >= visits) return;
    if (performance.now() > deadline)
      throw new Error(`${visits} visits answered, ${stored.rows} stored (${stored.rollups} in the rollups) after ${timeoutMs / 1000} s`);
    await sleep(100);
  }
}

console.log(
  `node ${process.version}; ${seconds} s of redirects from ${connections} connections (autocannon, its own process), ${rate > 0 ? `${rate}/s offered` : 'as fast as answered'}, browser user agent`,
);
console.log(`before the runs: ${await otherLoad()}`);
const modes: ('embedded' | 'services')[] = process.env.KAFKA_BROKERS ? ['embedded', 'services'] : ['embedded'];
const results: Figures[] = [];
let failed = false;
for (const mode of modes) {
  try {
    results.push(await run(mode));
  } catch (error) {
    failed = true;
    console.error(`benchmark failed: ${(error as Error).message}`);
  }
}
console.log(`after the runs: ${await otherLoad()}`);
console.log(
  `\n${'mode'.padEnd(10)}${pad('visits', 9)}${pad('redirects/s', 13)}${pad('p50 ms', 8)}${pad('p99 ms', 8)}${pad('drain s', 9)}${pad('CPU µs/visit', 14)}${pad('peak RSS MB', 13)}`,
);
for (const r of results) {
  console.log(
    `${r.mode.padEnd(10)}${pad(String(r.answered), 9)}${pad(r.rps.toFixed(0), 13)}${pad(String(r.p50), 8)}${pad(String(r.p99), 8)}${pad(r.drainS.toFixed(1), 9)}${pad(r.cpuUs.toFixed(1), 14)}${pad(r.peakRssMb.toFixed(0), 13)}`,
  );
}
for (const r of results) console.log(`${r.mode}: ${r.inserts} inserts into visits, ${r.rowsPerInsert.toFixed(0)} rows each`);
for (const r of results)
  console.log(
    `${r.mode}: memory at the load's end: ${r.memory.rssMb.toFixed(0)} MB resident, of which V8's heap ${r.memory.heapMb.toFixed(0)} MB and buffers ${r.memory.externalMb.toFixed(0)} MB`,
  );
for (const r of results) console.log(`${r.mode}: CPU µs per visit by thread: ${r.threads.map(([name, us]) => `${name} ${us.toFixed(1)}`).join(', ')}`);
for (const r of results) {
  const verdict = (ok: boolean) => (ok ? 'within target' : 'BELOW target');
  console.log(
    `${r.mode}: CPU ${r.cpuUs.toFixed(1)} µs/visit (target ≤ ${TARGETS.cpuUs}): ${verdict(r.cpuUs <= TARGETS.cpuUs)}; peak RSS ${r.peakRssMb.toFixed(0)} MB (≤ ${TARGETS.rssMb}): ${verdict(r.peakRssMb <= TARGETS.rssMb)}; p99 ${r.p99} ms (≤ ${TARGETS.p99Ms}): ${verdict(r.p99 <= TARGETS.p99Ms)}`,
  );
}
process.exit(failed ? 1 : 0);
