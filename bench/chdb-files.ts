// `bash bench/run.sh chdb-files [pairs] [batches]`: what chDB's inserts cost in kernel time on the
// disk and on a tmpfs. Each run is a fresh process with a fresh chDB (its folder under the OS's
// temporary directory, or under /dev/shm), which inserts the same pre-encoded visits as an enricher
// at 3 000 visits/s does (a 3 000-row batch a second, after three warm-up batches), with the event
// loop and chDB's threads pinned to one core; the runs alternate disk and tmpfs. It prints, per run,
// the process's CPU per row (user and kernel) and chDB's threads' share of it.
//
// Why: on ext4 without a journal (this project's VMs) the kernel's inode allocator skips, one
// lookup each, every inode deleted in the last 60 s (360 s while its inode table block is dirty;
// Linux 5.7 and later), and chDB creates and deletes a few hundred files a second while it inserts
// and merges. Its kernel time then grows with what this run and the runs before it deleted. It
// needs a writable /dev/shm.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { enrich } from '#shared/visits/enrichment.js';
import { encodeVisits } from '#shared/visits/visit-rows.js';
import { visitorHash } from '#shared/visits/visitor-hash.js';
import { openGeoLookup } from '#shared/geo.js';
import type { RawVisit } from '#shared/visits/raw-visit.js';
import { CHDB_DIR_PREFIX, LOG_DIR_PREFIX } from '#tests/support/context.js';
import { runBench } from './lib/context.js';
import { fileSystemOf } from './lib/data-root.js';
import { cpuOfStat } from './lib/proc.js';
import { sampleVisit } from './lib/sample-visit.js';

const BATCH = 3_000;
const WARM_UP = 3;
const PACE_MS = 1_000;
const pairs = Number(process.argv[2] ?? 3);
const batches = Number(process.argv[3] ?? 20);
if (!Number.isInteger(pairs) || pairs < 1 || !Number.isInteger(batches) || batches < 1) {
  console.error('usage: bash bench/run.sh chdb-files [pairs ≥ 1] [batches ≥ 1]');
  process.exit(1);
}

/** User and kernel CPU µs in a `/proc/…/stat` line. */
const usage = (stat: string) => ({ user: cpuOfStat(stat, 'user'), kernel: cpuOfStat(stat, 'system') });

/**
 * The process's CPU so far (its ended threads too), and each of chDB's threads' by thread id: every
 * thread but the event loop and Node's own, which carry the process's name (proc.ts's rule).
 */
function reading() {
  const whole = usage(readFileSync(`/proc/${process.pid}/stat`, 'utf8'));
  const processName = nameOf(readFileSync(`/proc/${process.pid}/stat`, 'utf8'));
  const chdb = new Map<string, { user: number; kernel: number }>();
  for (const tid of readdirSync(`/proc/${process.pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${process.pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    const name = nameOf(stat);
    if (tid === String(process.pid) || name === processName || name.startsWith('libuv')) continue;
    chdb.set(tid, usage(stat));
  }
  return { whole, chdb };
}

const nameOf = (stat: string) => stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));

/** chDB's threads' CPU between two readings, thread by thread (one that ended in between is left out, not subtracted). */
function chdbBetween(before: ReturnType<typeof reading>, after: ReturnType<typeof reading>) {
  const sum = { user: 0, kernel: 0 };
  for (const [tid, now] of after.chdb) {
    const then = before.chdb.get(tid) ?? { user: 0, kernel: 0 };
    sum.user += now.user - then.user;
    sum.kernel += now.kernel - then.kernel;
  }
  return sum;
}

if (process.argv[4] === 'child') {
  spawnSync('taskset', ['-a', '-cp', '0', String(process.pid)], { stdio: 'ignore' });
  const link = { id: '0193a1f2-7c1e-7d3a-9b1e-3f6c2a1d4e60', slug: 'load' };
  await runBench({}, async (context) => {
    const geo = await openGeoLookup();
    const inserts = [];
    for (let b = 0; b < WARM_UP + batches; b++) {
      const visits = Array.from({ length: BATCH }, (_, i) => JSON.parse(sampleVisit(b * BATCH + i, link).value) as RawVisit);
      inserts.push(
        await encodeVisits(visits, (raw) => ({ ...enrich(raw, geo), visitor_hash: visitorHash('bench', raw.ip_public, raw.user_agent), is_unique: 0 })),
      );
    }
    for (const insert of inserts.slice(0, WARM_UP)) await context.analytics.insertEncoded(insert);
    await sleep(3_000);
    const before = reading();
    const start = performance.now();
    for (let b = 0; b < batches; b++) {
      await context.analytics.insertEncoded(inserts[WARM_UP + b]!);
      const wait = start + (b + 1) * PACE_MS - performance.now();
      if (wait > 0) await sleep(wait);
    }
    // The merges the inserts started.
    await sleep(2_000);
    const after = reading();
    const chdb = chdbBetween(before, after);
    const rows = BATCH * batches;
    const per = (a: number, b = 0) => ((a - b) / rows).toFixed(1);
    console.log(
      `${per(after.whole.user + after.whole.kernel, before.whole.user + before.whole.kernel)} µs a row (user ${per(after.whole.user, before.whole.user)}, kernel ${per(after.whole.kernel, before.whole.kernel)}); chDB's threads: user ${per(chdb.user)}, kernel ${per(chdb.kernel)}`,
    );
  });
}

const memory = join('/dev/shm', `linktrack-chdb-files-${process.pid}`);
mkdirSync(memory, { recursive: true });
const roots = [
  { dir: tmpdir(), label: `${tmpdir()} (${fileSystemOf(tmpdir())})` },
  { dir: memory, label: `/dev/shm (${fileSystemOf(memory)})` },
];
console.log(`${batches} inserts of ${BATCH} rows a second in each run, a fresh process and chDB each, pinned to core 0`);
try {
  for (let pair = 1; pair <= pairs; pair++) {
    for (const root of roots) {
      const child = spawnSync(process.execPath, [process.argv[1]!, String(pairs), String(batches), 'child'], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'inherit'],
        env: { ...process.env, TMPDIR: root.dir },
        timeout: (batches + 120) * 1000,
      });
      // What the child's test context made under its TMPDIR (its chDB and message-log folders), also when it was killed.
      if (child.pid) {
        for (const prefix of [CHDB_DIR_PREFIX, LOG_DIR_PREFIX])
          rmSync(join(root.dir, `${prefix}${child.pid}`), { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
      }
      if (child.status !== 0) throw new Error(`a run on ${root.label} failed: ${child.error?.message ?? child.signal ?? `exit ${child.status}`}`);
      console.log(`pair ${pair}, ${root.label}: ${child.stdout.trim()}`);
    }
  }
} finally {
  rmSync(memory, { recursive: true, force: true });
}
process.exit(0);
