// The memory budget of a process (issue 37): how much it may use, and the sizes of the embedded
// engines' caches, pools and threads derived from it. ClickHouse's server defaults are sized for a
// machine of its own (a 5 GiB mark cache, a memory limit of 90 % of the RAM, as many threads as
// cores); an embedded chDB shares the process with Node and PGlite, so each is given its share.
import { readFileSync } from 'node:fs';
import { availableParallelism, totalmem } from 'node:os';
import { dirname } from 'node:path';

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
 * The memory limit of this process's cgroup in MiB, or undefined when none is set or it is larger
 * than the machine. The cgroup is the one /proc/self/cgroup names (v2's `0::/path` and v1's
 * `memory` line), found under its hierarchy's mount point (/proc/self/mountinfo): a process in a
 * cgroup of its own on a host (`/sys/fs/cgroup/memory/<run>/`) as well as one in a container,
 * whose cgroup is its mount's root. The limit kept is the smallest of v2's `memory.max` and v1's
 * `memory.limit_in_bytes` of that cgroup and of each cgroup above it (a parent's limit binds its
 * children). `fsRoot` prefixes every path read (tests lay out a /proc and /sys of their own).
 */
export function cgroupLimitMb(fsRoot = '', machineBytes = totalmem()): number | undefined {
  const read = (path: string) => {
    try {
      return readFileSync(fsRoot + path, 'utf8');
    } catch {
      return undefined;
    }
  };
  const membership = read('/proc/self/cgroup');
  const mounts = read('/proc/self/mountinfo');
  if (membership === undefined || mounts === undefined) return undefined; // not Linux
  let smallest = Infinity;
  for (const { path, mount } of cgroupDirs(membership, mounts)) {
    const file = mount.version === 2 ? 'memory.max' : 'memory.limit_in_bytes';
    // From the process's cgroup up to its hierarchy's root: the smallest limit on the way binds.
    for (let dir = mount.point + path; ; dir = dirname(dir)) {
      const bytes = limitBytes(read(`${dir}/${file}`));
      if (bytes !== undefined) smallest = Math.min(smallest, bytes);
      if (dir.length <= mount.point.length) break;
    }
  }
  if (smallest >= NO_LIMIT_ABOVE || smallest >= machineBytes) return undefined;
  return Math.floor(smallest / MiB);
}

/** A limit file's bytes: undefined for v2's `max`, a missing file or text that is not a positive number. */
function limitBytes(text: string | undefined): number | undefined {
  const bytes = Number(text?.trim());
  return text !== undefined && Number.isFinite(bytes) && bytes > 0 ? bytes : undefined;
}

/** A mounted cgroup hierarchy that holds the memory controller. */
export interface CgroupMount {
  version: 1 | 2;
  /** Where the hierarchy is mounted, and which of its cgroups is that mount's root. */
  point: string;
  root: string;
}

/**
 * The cgroup hierarchies in a /proc/…/mountinfo text that may hold the memory controller: every
 * cgroup2 mount (whether memory is enabled there is in its `cgroup.controllers`) and the v1 mounts
 * with the `memory` option.
 */
export function memoryCgroupMounts(mountinfo: string): CgroupMount[] {
  const mounts: CgroupMount[] = [];
  for (const line of mountinfo.split('\n')) {
    const [before, after] = line.split(' - ');
    if (!before || !after) continue;
    const fields = before.split(' ');
    const [fsType, , superOptions = ''] = after.split(' ');
    // mountinfo escapes spaces and the like in paths as octal (\040).
    const unescape = (path = '') => path.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
    const [root, point] = [unescape(fields[3]), unescape(fields[4])];
    if (fsType === 'cgroup2') mounts.push({ version: 2, point, root });
    else if (fsType === 'cgroup' && superOptions.split(',').includes('memory')) mounts.push({ version: 1, point, root });
  }
  return mounts;
}

/**
 * The folders of this process's memory cgroups, v2's and v1's, each as a path below its hierarchy's
 * mount point: /proc/self/cgroup's path less the mount's root (a container's mount root is its own
 * cgroup, where /proc/self/cgroup may still show the host's path or `/`).
 */
function cgroupDirs(membership: string, mountinfo: string): { path: string; mount: CgroupMount }[] {
  const mounts = memoryCgroupMounts(mountinfo);
  const dirs: { path: string; mount: CgroupMount }[] = [];
  for (const line of membership.split('\n')) {
    const match = /^(\d+):([^:]*):(.*)$/.exec(line.trim());
    if (!match) continue;
    const [, id, controllers, path] = match as unknown as [string, string, string, string];
    const version = id === '0' && controllers === '' ? 2 : controllers.split(',').includes('memory') ? 1 : undefined;
    if (!version) continue;
    for (const mount of mounts.filter((candidate) => candidate.version === version)) {
      const root = mount.root === '/' ? '' : mount.root;
      const below = root && (path === root || path.startsWith(`${root}/`)) ? path.slice(root.length) : root ? '' : path;
      dirs.push({ path: below === '/' ? '' : below, mount });
    }
  }
  return dirs;
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
