// Load generation shared by the benchmarks: autocannon's CLI in a child process (pinned to its own
// core when `taskset` is there, with this process on core 0), medians and a check of other load.
import { spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { cpus } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';

const autocannonBin = createRequire(import.meta.url).resolve('autocannon/autocannon.js');

/** Pins this process to core 0 and returns the prefix that runs the load generator on core 1 (empty when it cannot). */
function pinCores(): string[] {
  if (cpus().length < 2) return [];
  const pinned = spawnSync('taskset', ['-a', '-cp', '0', String(process.pid)], { stdio: 'ignore' });
  return pinned.status === 0 ? ['taskset', '-c', '1'] : [];
}
let loadPrefix: string[] | undefined;
/** Pins once (on first use): the command prefix of the load generator. */
const corePinning = (): string[] => (loadPrefix ??= pinCores());
/**
 * Lets a server process (and its threads) run on every core, whatever this process was pinned to
 * when it started it: the platform bench's servers — the platform and its bare baseline alike — are
 * placed the same way, whichever started after the first load pinned this process to core 0.
 */
export function onEveryCore(pid: number): void {
  if (cpus().length < 2) return;
  spawnSync('taskset', ['-a', '-cp', `0-${cpus().length - 1}`, String(pid)], { stdio: 'ignore' });
}
/** Pins a process and its threads to one core (threads it starts later inherit it); false without taskset or a second core. */
export function pinToCore(pid: number, core: number): boolean {
  if (cpus().length < 2) return false;
  return spawnSync('taskset', ['-a', '-cp', String(core), String(pid)], { stdio: 'ignore' }).status === 0;
}
/**
 * For a benchmark whose server is another process, pinned to core 0 with `pinToCore`: this process
 * (the client of the reports and exports, the samplers) joins the load generator on core 1, so that
 * the server's core runs the server alone. False when it cannot pin.
 */
export function pinClientSide(): boolean {
  return loadPinned() && pinToCore(process.pid, 1);
}
/** Whether the load generator runs pinned to core 1 (this process then on core 0). */
export function loadPinned(): boolean {
  return corePinning().length > 0;
}
export function pinningNote(): string {
  return loadPinned() ? 'server pinned to core 0, autocannon to core 1' : 'cores not pinned (no taskset or one core)';
}

export interface Run {
  rps: number;
  /** Server CPU time (user + system) of this process per request, µs. */
  cpuUs: number;
  p50: number;
  p99: number;
  total: number;
}

/** Subset of autocannon's `--json` result read here. */
interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  errors: number;
  timeouts: number;
  statusCodeStats?: Record<string, { count: number }>;
}

/**
 * One autocannon run in a child process; fails on any error, timeout or status other than
 * `expectStatus` (default 200).
 */
export function cannon(
  url: string,
  options: { durationSec: number; connections: number; headers?: Record<string, string>; expectStatus?: number; rate?: number },
): Promise<Run> {
  const expected = String(options.expectStatus ?? 200);
  const args = [autocannonBin, '--json', '-n', '-c', String(options.connections), '-p', '1', '-d', String(options.durationSec)];
  if (options.rate) args.push('-R', String(options.rate));
  for (const [name, value] of Object.entries(options.headers ?? {})) args.push('-H', `${name}=${value}`);
  args.push(url);
  return new Promise((resolve, reject) => {
    const cpuBefore = process.cpuUsage();
    const [command, ...prefixArgs] = [...corePinning(), process.execPath];
    const child = spawn(command, [...prefixArgs, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('error', reject);
    child.once('close', (code) => {
      const cpu = process.cpuUsage(cpuBefore);
      if (code !== 0) return reject(new Error(`autocannon exited with ${code}: ${stderr.trim()}`));
      let result: AutocannonResult;
      try {
        result = JSON.parse(stdout) as AutocannonResult;
      } catch (error) {
        return reject(new Error(`autocannon printed no JSON: ${stdout.slice(0, 500)} ${stderr.slice(0, 500)}`, { cause: error }));
      }
      const statuses = result.statusCodeStats ?? {};
      const unexpected = Object.keys(statuses).filter((status) => status !== expected);
      if (unexpected.length > 0 || !statuses[expected] || result.errors > 0 || result.timeouts > 0) {
        return reject(
          new Error(`${url}: ${result.errors} errors, ${result.timeouts} timeouts; status codes ${JSON.stringify(statuses)} (expected only ${expected})`),
        );
      }
      const total = result.requests.total;
      resolve({ rps: result.requests.average, cpuUs: (cpu.user + cpu.system) / total, p50: result.latency.p50, p99: result.latency.p99, total });
    });
  });
}

/** The throughput of the best of some runs (interference from outside only ever slows a run). */
export const bestRps = (runs: Run[]) => Math.max(...runs.map((run) => run.rps));

export const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};
/** The q-quantile (0–1) of values sorted ascending (nearest rank). */
export const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
export const pad = (value: string, width: number) => value.padStart(width);
export const percent = (value: number) => `${(value * 100).toFixed(1)} %`;

/**
 * How busy other processes keep the machine: the share of all cores in use over one second while
 * this benchmark idles (its own CPU time subtracted), with a warning above 10 %.
 */
export async function otherLoad(): Promise<string> {
  const totals = () => {
    let busy = 0;
    let all = 0;
    for (const { times } of cpus()) {
      const used = times.user + times.nice + times.sys + times.irq;
      busy += used;
      all += used + times.idle;
    }
    return { busy, all };
  };
  const before = totals();
  const own = process.cpuUsage();
  await sleep(1_000);
  const after = totals();
  const ownUsed = process.cpuUsage(own);
  const busyMs = after.busy - before.busy - (ownUsed.user + ownUsed.system) / 1000;
  const share = Math.max(0, busyMs / Math.max(1, after.all - before.all));
  return `other processes kept ${percent(share)} of the ${cpus().length} cores busy${share > 0.1 ? ' (they compete with the benchmark: expect noisy numbers)' : ''}`;
}
