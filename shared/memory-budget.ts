// The memory budget of a process (issue 37): how much it may use, and the sizes of the embedded
// engines' caches, pools and threads derived from it. ClickHouse's server defaults are sized for a
// machine of its own (a 5 GiB mark cache, a memory limit of 90 % of the RAM, as many threads as
// cores); an embedded chDB shares the process with Node and PGlite, so each is given its share.
import { readFileSync } from 'node:fs';
import { availableParallelism, totalmem } from 'node:os';

/** Where the limit came from: the setting, the process's cgroup, or the default. */
export type MemoryLimitSource = 'MEMORY_LIMIT_MB' | 'cgroup' | 'default';

/** The default limit (MiB) without a setting or a cgroup limit: a small server's, or the machine's when it has less. */
export const DEFAULT_MEMORY_LIMIT_MB = 1024;

/** The sizes one limit gives each engine. */
export interface MemoryBudget {
  limitMb: number;
  source: MemoryLimitSource;
  chdb: {
    /** Server settings, given to the engine when it starts (`--name=value`): they cannot change later. */
    server: Record<string, number>;
    /** Settings of every query and insert (the session's defaults). */
    query: Record<string, number>;
  };
  /** PGlite's `shared_buffers`, MiB (its WebAssembly module starts at 128 MiB whatever it is). */
  pgliteSharedBuffersMb: number;
}

const MiB = 1_048_576;
/** cgroup v1 writes "no limit" as the largest page-aligned 64-bit value; anything near it is none. */
const NO_LIMIT_ABOVE = 2 ** 60;

/**
 * The memory limit of this process's cgroup in MiB (v2 `memory.max`, else v1
 * `memory.limit_in_bytes`, under `root`), or undefined when none is set or it is larger than the
 * machine.
 */
export function cgroupLimitMb(root = '/sys/fs/cgroup', machineBytes = totalmem()): number | undefined {
  for (const file of [`${root}/memory.max`, `${root}/memory/memory.limit_in_bytes`]) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8').trim();
    } catch {
      continue; // not this cgroup version
    }
    if (text === 'max') return undefined;
    const bytes = Number(text);
    if (!Number.isFinite(bytes) || bytes <= 0 || bytes >= NO_LIMIT_ABOVE || bytes >= machineBytes) return undefined;
    return Math.floor(bytes / MiB);
  }
  return undefined;
}

/** The limit a process keeps: MEMORY_LIMIT_MB when set, else its cgroup's, else the default (at most the machine's memory). */
export function resolveMemoryLimit(
  setting: number | undefined,
  cgroupMb = cgroupLimitMb(),
  machineBytes = totalmem(),
): { limitMb: number; source: MemoryLimitSource } {
  if (setting !== undefined) return { limitMb: setting, source: 'MEMORY_LIMIT_MB' };
  if (cgroupMb !== undefined) return { limitMb: cgroupMb, source: 'cgroup' };
  return { limitMb: Math.min(DEFAULT_MEMORY_LIMIT_MB, Math.floor(machineBytes / MiB)), source: 'default' };
}

const clamp = (value: number, min: number, max: number) => Math.min(max, Math.max(min, Math.round(value)));

/**
 * The sizes a limit gives the engines: chDB's caches a few MiB each, not ClickHouse's 5 GiB (the
 * one-process platform's tables are small), its merges and threads by the limit and the cores.
 * chDB's own memory limit is left to the engine (90 % of its cgroup's limit or of the machine's
 * memory): its tracker counts caches, parts and merges as well as queries, and a limit from the
 * budget failed work the engine otherwise completes — 10 000-row inserts into `visits` at 410 MiB,
 * a million-row INSERT … SELECT (the stats-export bench's seeding) at 922 MiB. Nor does a query
 * spill its GROUP BY or sort to disk early: past a tenth of 1 GiB a million-visit link's report
 * took 434 ms at p50 instead of 158 to 295 ms.
 */
export function memoryBudget(limitMb: number, source: MemoryLimitSource, cores = availableParallelism()): MemoryBudget {
  const bytes = (fraction: number, minMb: number, maxMb: number) => clamp(limitMb * fraction, minMb, maxMb) * MiB;
  return {
    limitMb,
    source,
    chdb: {
      server: {
        mark_cache_size: bytes(1 / 32, 8, 1024),
        index_mark_cache_size: bytes(1 / 128, 2, 256),
        primary_index_cache_size: bytes(1 / 64, 4, 512),
        vector_similarity_index_cache_size: bytes(1 / 256, 1, 64),
        query_condition_cache_size: bytes(1 / 128, 2, 100),
        // Merges: one at a time below 768 MiB (each running merge holds its parts' blocks), else up to
        // one per core, at most 4. The schedule pool runs the tables' housekeeping.
        background_pool_size: clamp(limitMb / 512, 1, Math.max(1, Math.min(cores, 4))),
        background_schedule_pool_size: clamp(limitMb / 512, 1, 4),
      },
      query: {
        max_threads: clamp(limitMb / 512, 1, cores),
      },
    },
    pgliteSharedBuffersMb: clamp(limitMb / 32, 16, 128),
  };
}

/** The server settings as chDB takes them when it opens its data directory (`clickhouse local`'s command line). */
export const chdbServerArgs = (server: MemoryBudget['chdb']['server']): string[] => Object.entries(server).map(([name, value]) => `--${name}=${value}`);
