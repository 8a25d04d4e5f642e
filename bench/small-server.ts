// The one-process platform on a small server (issue 37): as `make run` starts it (the compiled
// entry point), in a memory cgroup of its own capped at 1 GiB and pinned to one core, under
// sustained redirects while an owner downloads a large CSV export and reads the 30-day report.
//   sudo bash bench/run.sh small-server [seconds] [redirects/s] [visits]      (root: it makes a cgroup)
// defaults 60 s, 2 000 redirects/s, 1 000 000 visits.
//
// A first start on a fresh DATA_DIR (uncapped, on every core: the set-up, not measured) creates the
// data and, through the API, an owner's token, a subdomain, the link the load visits and the link
// the export reads; it is stopped, and `visits` visits over the last 30 days are generated into the
// platform's chDB by this process (bench/lib/seed-visits.ts, as the stats-export bench does), all on
// the exported link but the 1 in 97 that are attacks without a link. Then the measured process starts
// on that data, started inside a new cgroup (v2 `memory.max`, else v1 `memory.limit_in_bytes` and
// `memory.memsw.limit_in_bytes`: 1 GiB, no swap) and pinned to core 0; it must size itself from the
// cgroup's limit (its `listening` log line says from where: anything but 1024 MiB from the cgroup
// fails the run). Autocannon (its own process, core 1, with this process) sends `redirects/s` for
// `seconds`; a sixth of the way in, the owner's subdomain report (30 days by day) is read five times,
// then the CSV export of the seeded link is downloaded, then the report is read five times again.
//
// Printed: the budget the platform reports, its resident memory 20 s after start (idle) and the
// cgroup's charge then, redirect p50/p99, the report's latency and the export's rows/s, the drain time
// (load's end until the owner's report and visit list count every answered redirect), peak RSS as the
// cgroup saw it (`memory.max_usage_in_bytes` / `memory.peak`: the process's memory and the page cache
// of its files) and as the process did (VmHWM, and RssAnon/RssFile sampled every 200 ms), the peaks
// of memory.stat's lines (which component held the memory), and the OOM kills in the cgroup. Exit 1
// when a visit answered is not stored, on any OOM kill, or when the platform did not size itself from
// the cgroup. A watchdog ends the run after `seconds` + 15 minutes; whatever happens, the platform is
// killed, the cgroup removed and the DATA_DIR deleted.
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '#shared/config.js';
import { PROJECT_ROOT } from '#shared/paths.js';
import {
  BROWSER_UA,
  EMBEDDED_STORES,
  client,
  freePort,
  killAll,
  seed,
  startProcess,
  storedCounts,
  waitHealthy,
  type Started,
} from '#tests/support/platform-process.js';
import { createMemoryCgroup, dropPageCache, MEMORY_STAT_KEYS, type MemoryCgroup } from './lib/cgroup.js';
import { downloadExport } from './lib/export-download.js';
import { cannon, median, otherLoad, pinClientSide } from './lib/load.js';
import { ENTRY, LOAD_ENV, waitStored } from './lib/platform-run.js';
import { cpuOf, mappedFiles, memoryOf } from './lib/proc.js';
import { seedVisitsInChild } from './lib/seed-visits.js';

const seconds = Number(process.argv[2] ?? 60);
const rate = Number(process.argv[3] ?? 2000);
const visits = Number(process.argv[4] ?? 1_000_000);
if (![seconds, rate, visits].every(Number.isInteger) || seconds < 10 || rate < 1 || visits < 1000) {
  console.error('usage: sudo bash bench/run.sh small-server [seconds ≥ 10] [redirects/s ≥ 1] [visits ≥ 1000]');
  process.exit(1);
}
/** The small server: 1 GiB and one core. */
const CAP_MB = 1024;
const CONNECTIONS = 50;
const IDLE_MS = 20_000;
const REPORT_READS = 5;
const DAYS = 30;
const MiB = 1_048_576;
const mb = (bytes: number) => (bytes / MiB).toFixed(0);

const dataDir = mkdtempSync(join(tmpdir(), 'linktrack-bench-small-'));
let cgroup: MemoryCgroup | undefined;
/** Kills what this run started and removes its cgroup and DATA_DIR; synchronous, so exit handlers can run it. */
function cleanUp(): void {
  killAll();
  try {
    cgroup?.remove();
  } catch (error) {
    console.error((error as Error).message);
  }
  cgroup = undefined;
  rmSync(dataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
}
const watchdog = setTimeout(
  () => {
    console.error(`benchmark failed: not done within ${seconds} s + 15 minutes; stopped`);
    cleanUp();
    process.exit(1);
  },
  (seconds + 900) * 1000,
);
watchdog.unref();
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    cleanUp();
    process.exit(1);
  });

const failures: string[] = [];
try {
  await run();
} catch (error) {
  failures.push((error as Error).message);
} finally {
  cleanUp();
}
console.log(`after the run: ${await otherLoad()}`);
for (const failure of failures) console.error(`benchmark failed: ${failure}`);
process.exit(failures.length > 0 ? 1 : 0);

async function run(): Promise<void> {
  console.log(
    `node ${process.version}; the platform capped at ${CAP_MB} MiB on one core; ${rate} redirects/s for ${seconds} s from ${CONNECTIONS} connections (autocannon, its own process), ${visits} visits seeded`,
  );
  console.log(`before the run: ${await otherLoad()}`);
  const port = await freePort();
  const env: Record<string, string> = {
    ...EMBEDDED_STORES,
    MEMORY_LIMIT_MB: '',
    ...LOAD_ENV,
    // The `listening` line names the memory budget; requests are not logged at any level.
    LOG_LEVEL: 'info',
    DATA_DIR: dataDir,
    PORT: String(port),
  };

  // The set-up: data, owner, links, then the seeded visits (the platform stopped: one chDB per folder).
  let started = performance.now();
  const first = startProcess(env, [ENTRY]);
  await waitHealthy(first, { timeoutMs: 120_000 });
  const seeded = await seed(port);
  const auth = { authorization: `Bearer ${seeded.token}` };
  const call = client(port);
  const me = await call('GET', '/api/v1/me', undefined, auth);
  const exported = await call('POST', '/api/v1/links', { subdomain: seeded.subdomain, slug: 'exported', target_url: 'https://example.com/exported' }, auth);
  if (me.status !== 200 || exported.status !== 201) throw new Error(`set-up: me ${me.status}, link ${exported.status} ${JSON.stringify(exported.json)}`);
  // The files of the project the platform maps (libchdb.so above all), read before stopping it.
  const mapped = mappedFiles(first.child.pid!, PROJECT_ROOT);
  first.child.kill('SIGTERM');
  await first.exited;
  const hot = exported.json.data.id as string;
  // seedVisits spreads a subdomain's other visits over 199 further links; all of these go to `hot`.
  await seedVisitsInChild(loadConfig({ ...process.env, ...env }).analytics, {
    total: visits,
    mine: visits,
    days: DAYS,
    ownerId: me.json.data.id,
    subdomain: seeded.subdomain,
    hot,
    hotRows: visits,
    links: [hot],
  });
  console.log(`set-up (first start, owner, links, ${visits} visits into chDB): ${((performance.now() - started) / 1000).toFixed(0)} s`);

  // Nothing maps them now (the set-up's processes have ended): the measured process reads them again, charged to its cgroup.
  const dropped = dropPageCache(mapped);
  console.log(
    `page cache of the project's files the platform maps (${mapped.map((path) => path.slice(path.lastIndexOf('/') + 1)).join(', ')}): ${dropped ? 'dropped, so that the capped process is charged for them' : 'NOT dropped (dd refused): they may be charged elsewhere'}`,
  );

  // The measured process: the restart on that data, in the cgroup, on core 0.
  cgroup = createMemoryCgroup(`linktrack-small-server-${process.pid}`, CAP_MB * MiB);
  const clientPinned = pinClientSide();
  started = performance.now();
  const serverPinned = cpus().length >= 2;
  const server = startProcess(env, [ENTRY], [...cgroup.prefix, ...(serverPinned ? ['taskset', '-c', '0'] : [])]);
  console.log(
    `cgroup v${cgroup.version} ${cgroup.dir}: ${CAP_MB} MiB, no swap; ${serverPinned && clientPinned ? 'the platform on core 0, autocannon and this process on core 1' : 'cores NOT pinned (no taskset or one core)'}`,
  );
  const memory = sampleMemory(server, cgroup);
  try {
    await measure(server, memory, cgroup, port, seeded, exported.json.data.id as string, started);
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${server.output().split('\n').slice(-30).join('\n')}`, { cause: error });
  } finally {
    memory.stop();
    memory.print();
    printCgroup(cgroup, server);
  }
}

/** The restarted platform under the cap: budget, idle memory, the load with the report and export during it, drain and the stored count. */
async function measure(
  server: Started,
  memory: ReturnType<typeof sampleMemory>,
  cgroup: MemoryCgroup,
  port: number,
  seeded: Awaited<ReturnType<typeof seed>>,
  hot: string,
  startedAt: number,
): Promise<void> {
  const pid = server.child.pid!;
  await waitHealthy(server, { timeoutMs: 120_000 });
  console.log(`restart under the cap: healthy after ${((performance.now() - startedAt) / 1000).toFixed(1)} s`);
  const listening = server
    .output()
    .split('\n')
    .map((line) => {
      try {
        return JSON.parse(line) as { msg?: string; memory_limit_mb?: number; memory_limit_from?: string };
      } catch {
        return {};
      }
    })
    .find((line) => line.msg === 'listening');
  console.log(`the platform's memory budget: ${listening?.memory_limit_mb} MiB from ${listening?.memory_limit_from} (its \`listening\` log line)`);
  if (listening?.memory_limit_mb !== CAP_MB || listening.memory_limit_from !== 'cgroup')
    failures.push(`the platform did not size itself from its cgroup: ${JSON.stringify(listening)} (expected ${CAP_MB} MiB from cgroup)`);

  memory.phase = 'idle';
  await sleep(IDLE_MS);
  console.log(
    `idle, ${IDLE_MS / 1000} s after healthy: ${memoryOf(pid, 'VmRSS').toFixed(0)} MB resident (RssAnon ${memoryOf(pid, 'RssAnon').toFixed(0)}, RssFile ${memoryOf(pid, 'RssFile').toFixed(0)}); the cgroup charged ${mb(cgroup.usageBytes())} MB`,
  );

  const url = `http://127.0.0.1:${port}/${seeded.slug}`;
  const headers = { host: seeded.host, 'user-agent': BROWSER_UA };
  memory.phase = 'warm-up';
  const warm = await cannon(url, { durationSec: 3, connections: CONNECTIONS, headers, expectStatus: 302, rate });
  await waitStored(port, seeded, warm.total, 120_000);

  const auth = { authorization: `Bearer ${seeded.token}` };
  const cpuBefore = cpuOf(pid);
  const loadStarted = performance.now();
  memory.phase = 'load';
  const load = cannon(url, { durationSec: seconds, connections: CONNECTIONS, headers, expectStatus: 302, rate });
  // The owner's work during the load; its failure fails the run after the load has ended.
  const during = (async () => {
    await sleep((seconds * 1000) / 6);
    memory.phase = 'load + report';
    const before = await readReport(port, seeded.subdomain, auth);
    memory.phase = 'load + CSV export';
    const csv = await downloadExport(port, 'csv', hot, auth);
    const exportEnded = performance.now();
    memory.phase = 'load + report';
    const after = await readReport(port, seeded.subdomain, auth);
    memory.phase = 'load';
    return { before, csv, exportEnded, after };
  })();
  let measured: Awaited<typeof load>;
  try {
    measured = await load;
  } finally {
    // Settled before anything else is reported: an owner's call still running is not left behind.
    await during.catch(() => undefined);
  }
  const loadEnded = performance.now();
  const cpuShare = (cpuOf(pid) - cpuBefore) / 1000 / (loadEnded - loadStarted);
  const owner = await during;
  memory.phase = 'drain';
  const answered = warm.total + measured.total;
  await waitStored(port, seeded, answered, 300_000);
  const drainS = (performance.now() - loadEnded) / 1000;
  const stored = await storedCounts(port, seeded.token, seeded.linkId);
  memory.phase = 'after';

  console.log(
    `\nredirects: ${measured.total} answered in ${seconds} s (${(measured.total / ((loadEnded - loadStarted) / 1000)).toFixed(0)}/s of ${rate} offered), p50 ${measured.p50} ms, p99 ${measured.p99} ms; the platform used ${(cpuShare * 100).toFixed(0)} % of its core`,
  );
  const rows = owner.csv.lines - 1;
  const exportEnd = (owner.exportEnded - loadEnded) / 1000;
  console.log(
    `CSV export of the seeded link during the load: ${rows} rows, ${mb(owner.csv.bytes)} MB in ${owner.csv.seconds.toFixed(1)} s: ${(rows / owner.csv.seconds).toFixed(0)} rows/s (it ended ${Math.abs(exportEnd).toFixed(1)} s ${exportEnd <= 0 ? 'before' : 'AFTER'} the load's end)`,
  );
  console.log(
    `the owner's 30-day report of the subdomain (${owner.before.visits} visits), ${REPORT_READS} reads each: before the export p50 ${owner.before.p50.toFixed(0)} ms, max ${owner.before.max.toFixed(0)} ms; after it p50 ${owner.after.p50.toFixed(0)} ms, max ${owner.after.max.toFixed(0)} ms`,
  );
  console.log(`drain: the last answered visit stored ${drainS.toFixed(1)} s after the load's end`);
  // autocannon stops with a request in flight on each connection: the platform answers and stores
  // those too, uncounted. Stored is what was counted, plus at most those (warm-up and load).
  const inFlight = 2 * CONNECTIONS;
  const verdict = stored.rows === stored.rollups && stored.rows >= answered && stored.rows <= answered + inFlight;
  console.log(
    `stored: ${stored.rows} rows and ${stored.rollups} in the rollups for ${answered} answered (+ at most ${inFlight} in flight at the stops): ${verdict ? 'every answered visit stored' : 'VISITS LOST'}`,
  );
  if (!verdict) failures.push(`answered ${answered} redirects, stored ${stored.rows} rows and ${stored.rollups} in the rollups`);
  console.log(`the platform's peak resident set (VmHWM): ${memoryOf(pid, 'VmHWM').toFixed(0)} MB`);
  server.child.kill('SIGTERM');
  await server.exited;
}

/** The owner's report of the subdomain (the 30 days before now, by day), read `REPORT_READS` times one after another. */
async function readReport(port: number, subdomain: string, auth: Record<string, string>) {
  const call = client(port);
  const times: number[] = [];
  let visits = 0;
  for (let i = 0; i < REPORT_READS; i++) {
    const t = performance.now();
    const report = await call('GET', `/api/v1/stats/subdomain/${subdomain}`, undefined, auth);
    times.push(performance.now() - t);
    if (report.status !== 200) throw new Error(`the owner's report: ${report.status} ${JSON.stringify(report.json)}`);
    visits = report.json.data.totals.visits;
  }
  return { p50: median(times), max: Math.max(...times), visits };
}

/**
 * Samples every 200 ms, by phase: the process's resident set and its two parts (RssAnon, its own
 * memory; RssFile, mapped files), and the cgroup's charge and memory.stat lines: the peak of each.
 */
function sampleMemory(server: Started, cgroup: MemoryCgroup) {
  const pid = server.child.pid!;
  const peaks = new Map<string, Map<string, number>>();
  const keep = (phase: string, name: string, value: number) => {
    if (Number.isNaN(value)) return; // the process has exited (no memory lines)
    const byName = peaks.get(phase) ?? peaks.set(phase, new Map()).get(phase)!;
    byName.set(name, Math.max(byName.get(name) ?? 0, value));
  };
  const last = { anon: NaN, file: NaN };
  /** memory.stat at the highest charge sampled, and the process's mapped files then. */
  const atPeak = { charge: 0, stat: {} as Record<string, number>, rssFile: NaN };
  const sampler = {
    phase: 'start',
    stop: () => clearInterval(timer),
    print: () => {
      console.log(
        "\npeak MB by phase (sampled every 200 ms): the process's VmRSS = RssAnon + RssFile (+ shmem); the cgroup's charge, its memory.stat lines, and held = anonymous + mapped files + shmem (the charge less the page cache the kernel reclaims at the cap)",
      );
      for (const [phase, byName] of peaks) console.log(`  ${phase.padEnd(18)} ${[...byName].map(([name, value]) => `${name} ${value.toFixed(0)}`).join(', ')}`);
      console.log(`the process's last sample: RssAnon ${last.anon.toFixed(0)} MB, RssFile ${last.file.toFixed(0)} MB`);
      const charged = MEMORY_STAT_KEYS[cgroup.version].map((key) => `${key} ${mb(atPeak.stat[key] ?? 0)}`).join(', ');
      console.log(`memory.stat at the highest charge sampled (${mb(atPeak.charge)} MB): ${charged} MB`);
      // A page of the page cache is charged to the cgroup that first read it: what the platform maps
      // from outside the project (node's binary, the C libraries), read by other processes of the
      // machine before, is not charged here. On a server of its own it would be.
      const mapped = atPeak.stat[cgroup.version === 2 ? 'file_mapped' : 'mapped_file'] ?? 0;
      console.log(
        `of the process's mapped files then (RssFile ${atPeak.rssFile.toFixed(0)} MB), ${Math.max(0, atPeak.rssFile - mapped / MiB).toFixed(0)} MB were charged to other cgroups (pages first read there: node's binary, the system's libraries, and libchdb.so's if its page cache was not dropped); a server of its own would charge them`,
      );
    },
  };
  const timer = setInterval(() => {
    try {
      const anon = memoryOf(pid, 'RssAnon');
      const file = memoryOf(pid, 'RssFile');
      keep(sampler.phase, 'VmRSS', memoryOf(pid, 'VmRSS'));
      keep(sampler.phase, 'RssAnon', anon);
      keep(sampler.phase, 'RssFile', file);
      if (!Number.isNaN(anon)) Object.assign(last, { anon, file });
    } catch {
      // the process has exited: the cgroup is still read
    }
    try {
      const charge = cgroup.usageBytes();
      keep(sampler.phase, 'cgroup', charge / MiB);
      const stat = cgroup.stat();
      if (charge > atPeak.charge) Object.assign(atPeak, { charge, stat, rssFile: last.file });
      for (const key of MEMORY_STAT_KEYS[cgroup.version]) keep(sampler.phase, key, (stat[key] ?? NaN) / MiB);
      keep(sampler.phase, 'held', heldBytes(stat, cgroup.version) / MiB);
    } catch {
      // the cgroup is being removed
    }
  }, 200);
  return sampler;
}

/** The cgroup's verdict: its peak charge and its OOM kills (any fails the run). */
function printCgroup(cgroup: MemoryCgroup, server: Started): void {
  const peak = cgroup.peakBytes();
  const kills = cgroup.oomKills();
  console.log(
    `cgroup: peak charge ${peak === undefined ? 'not reported by this kernel' : `${mb(peak)} MB`} of ${CAP_MB} MiB (the kernel's high-water mark: the process's memory and the page cache charged to it, which the kernel reclaims at the cap before it kills)`,
  );
  console.log(
    `OOM kills in the cgroup: ${kills ?? 'not counted by this kernel'}${server.child.signalCode ? `; the platform ended by ${server.child.signalCode}` : ''}`,
  );
  if (kills === undefined || kills > 0) failures.push(`OOM kills in the cgroup: ${kills ?? 'unknown'} (must be 0)`);
}

/** What the kernel cannot reclaim from the cgroup without taking it from the process: its own memory, the files it maps (its code) and shared memory. */
function heldBytes(stat: Record<string, number>, version: 1 | 2): number {
  return version === 2 ? (stat.anon ?? 0) + (stat.file_mapped ?? 0) + (stat.shmem ?? 0) : (stat.rss ?? 0) + (stat.mapped_file ?? 0) + (stat.shmem ?? 0);
}
