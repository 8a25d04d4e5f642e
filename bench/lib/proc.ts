// What a process of this machine has used, read from /proc: CPU time (whole process and by thread
// kind) and resident memory. Shared by the benchmarks that load the platform from outside.
import { readdirSync, readFileSync } from 'node:fs';

/** USER_HZ: /proc/<pid>/stat counts CPU time in 1/100 s on Linux. */
const CLOCK_TICKS = 100;

/** User + system CPU time of a process and all its threads so far, µs. */
export function cpuOf(pid: number): number {
  return cpuOfStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
}

/** User and/or system CPU time (µs) in a `/proc/…/stat` line (fields 14 and 15, after the command's parenthesis). */
export function cpuOfStat(stat: string, part: 'user' | 'system' | 'both' = 'both'): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = (part === 'system' ? 0 : Number(fields[11])) + (part === 'user' ? 0 : Number(fields[12]));
  return (ticks * 1e6) / CLOCK_TICKS;
}

/**
 * CPU time (µs) of each thread of a process so far, summed by thread name: the event loop, Node's
 * helpers (V8's GC and compiler threads, libuv's pool), chDB's (ClickHouse's) threads, …
 */
export function threadsOf(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  // Node's threads other than the event loop (V8's GC and compiler helpers, libuv's pool, workers)
  // carry the process's name: `node`, or its title when it set one (`node (vitest 1)`).
  const processName = commandOf(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    const command = commandOf(stat);
    // ClickHouse numbers its threads of one kind (ThreadPool 3, MergeMutate 12): summed by kind.
    const named = command.replace(/[\d:]+$/, '').replace(/\s+$/, '') || '?';
    // The event loop's thread is the process's own id.
    if (tid === String(pid)) {
      // The event loop's system time is mostly the kernel's loopback TCP: its socket writes carry
      // the answer through both ends' TCP stacks (a real network card takes part of that off).
      byName.set('event loop (user)', cpuOfStat(stat, 'user'));
      byName.set('event loop (kernel)', cpuOfStat(stat, 'system'));
      continue;
    }
    const name = command === processName ? 'node helpers' : named;
    byName.set(name, (byName.get(name) ?? 0) + cpuOfStat(stat));
  }
  return byName;
}

/** The command (thread name) of a `/proc/…/stat` line: between the first `(` and the last `)`. */
const commandOf = (stat: string) => stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));

/**
 * CPU µs per unit by thread name between two readings of `threadsOf` (names under 0.05 µs left
 * out), largest first. A thread that ended between the readings takes its time with it: the sum
 * may fall short of the process's own figure (`cpuOf`), never exceed it.
 */
export function threadsPer(before: Map<string, number>, after: Map<string, number>, units: number): [string, number][] {
  return [...after]
    .map(([name, us]): [string, number] => [name, (us - (before.get(name) ?? 0)) / units])
    .filter(([, us]) => us >= 0.05)
    .sort((a, b) => b[1] - a[1]);
}

/** The thread kinds a reader compares across processes: event loop, Node's helper threads, ClickHouse's (chDB's) threads. */
export type ThreadKind = 'event loop' | 'helpers' | 'ClickHouse';

/**
 * `threadsPer`'s figures summed by kind: the event loop (user and kernel), Node's helpers (V8's
 * and libuv's threads, and LMDB's writer: all named like the process, or libuv-worker), and every
 * other thread, which in our processes is chDB's (ClickHouse's names: ThreadPool, BgSchPool,
 * MergeMutate, …).
 */
export function threadKinds(threads: [string, number][]): Record<ThreadKind, number> {
  const kinds: Record<ThreadKind, number> = { 'event loop': 0, helpers: 0, ClickHouse: 0 };
  for (const [name, us] of threads) {
    if (name.startsWith('event loop')) kinds['event loop'] += us;
    else if (name === 'node helpers' || name.startsWith('libuv')) kinds.helpers += us;
    else kinds.ClickHouse += us;
  }
  return kinds;
}

/**
 * A line of /proc/<pid>/status in MB (VmHWM: peak resident set; VmRSS: now; RssAnon: the part of
 * VmRSS that is the process's own memory; RssFile: mapped files' pages, chiefly the code of
 * libchdb.so, clean pages the kernel may drop and reread).
 */
export function memoryOf(pid: number, field: 'VmHWM' | 'VmRSS' | 'RssAnon' | 'RssFile'): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : NaN;
}

/** The files a process maps (/proc/<pid>/maps) whose paths start with `under`: its libraries and memory-mapped data there. */
export function mappedFiles(pid: number, under: string): string[] {
  const paths = new Set<string>();
  for (const line of readFileSync(`/proc/${pid}/maps`, 'utf8').split('\n')) {
    const path = line.split(/\s+/).slice(5).join(' ');
    if (path.startsWith(under)) paths.add(path);
  }
  return [...paths];
}

/** What waitQuiet saw: how long it waited, and the busiest process's CPU (% of one core) over the last window. */
export interface Quiet {
  waitedS: number;
  percent: number;
  quiet: boolean;
}

/**
 * Waits until each of the processes uses at most `percent` of one core over a window of `windowMs`
 * (ClickHouse's merges of what a warm-up inserted, the JIT's late compiles), or until `timeoutMs`.
 * A measured span that starts while those run counts them against the load: the same wait before
 * each measurement starts them from the same state.
 */
export async function waitQuiet(pids: number[], { percent = 4, windowMs = 2_000, timeoutMs = 60_000 } = {}): Promise<Quiet> {
  const started = performance.now();
  for (;;) {
    const before = pids.map(cpuOf);
    const from = performance.now();
    await new Promise((resolve) => setTimeout(resolve, windowMs));
    const elapsedUs = (performance.now() - from) * 1000;
    const busiest = Math.max(...pids.map((pid, i) => ((cpuOf(pid) - before[i]!) / elapsedUs) * 100));
    const waitedS = (performance.now() - started) / 1000;
    if (busiest <= percent) return { waitedS, percent: busiest, quiet: true };
    if (performance.now() - started >= timeoutMs) return { waitedS, percent: busiest, quiet: false };
  }
}
