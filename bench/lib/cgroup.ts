// A memory cgroup of its own for a benchmark's server process (root only): a cap on its memory, what
// it used at its peak, how often the kernel's OOM killer ended a process in it, and where its memory
// was (the cgroup's memory.stat). cgroup v2 (`memory.max`) where a v2 hierarchy holds the memory
// controller, else v1 (`memory.limit_in_bytes`, and `memory.memsw.limit_in_bytes` when swap is
// accounted). The cgroup is made at the hierarchy's root, beside whatever cgroup this process is in.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { memoryCgroupMounts, type CgroupMount } from '#shared/memory-budget.js';

export interface MemoryCgroup {
  version: 1 | 2;
  dir: string;
  /**
   * A command prefix that runs a command in the cgroup from its first instruction: a shell writes its
   * own pid into `cgroup.procs` and execs the command, which keeps that pid. (Moving a running
   * process in leaves what it allocated before charged where it was: v1's move_charge_at_immigrate
   * is gone from recent kernels, and v2 never had it.)
   */
  prefix: string[];
  /** Bytes charged now: the processes' own memory and the page cache of the files they read and wrote. */
  usageBytes(): number;
  /** The kernel's high-water mark of `usageBytes` (v1 `memory.max_usage_in_bytes`, v2 `memory.peak`; undefined on a v2 kernel without it). */
  peakBytes(): number | undefined;
  /** Processes of the cgroup the OOM killer ended (v1 `memory.oom_control`, v2 `memory.events`: `oom_kill`; undefined on a kernel that does not count them). */
  oomKills(): number | undefined;
  /** memory.stat as numbers (bytes, or counts for the event lines). */
  stat(): Record<string, number>;
  /** Removes the cgroup; its processes must have ended (it retries for a few seconds while they exit). */
  remove(): void;
}

const read = (path: string) => readFileSync(path, 'utf8');
/** A `name value` line of a cgroup's key-value file. */
const field = (text: string, name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
/** Blocks for `ms` (the removal runs in exit handlers, where nothing asynchronous runs). */
const pause = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/** The hierarchy a cap goes into: a v2 mount whose root offers the memory controller, else the v1 memory mount. */
function memoryHierarchy(): CgroupMount {
  const mounts = memoryCgroupMounts(read('/proc/self/mountinfo'));
  const v2 = mounts.find((mount) => mount.version === 2 && /\bmemory\b/.test(readOr(join(mount.point, 'cgroup.controllers'))));
  const v1 = mounts.find((mount) => mount.version === 1);
  const chosen = v2 ?? v1;
  if (!chosen) throw new Error('no cgroup hierarchy with the memory controller is mounted here');
  return chosen;
}

const readOr = (path: string) => {
  try {
    return read(path);
  } catch {
    return '';
  }
};

/** Creates the cgroup `name` with a memory cap of `limitBytes` (no swap beyond it). */
export function createMemoryCgroup(name: string, limitBytes: number): MemoryCgroup {
  const mount = memoryHierarchy();
  const dir = join(mount.point, name);
  if (mount.version === 2 && !/\bmemory\b/.test(readOr(join(mount.point, 'cgroup.subtree_control'))))
    writeFileSync(join(mount.point, 'cgroup.subtree_control'), '+memory');
  mkdirSync(dir);
  const file = (name: string) => join(dir, name);
  try {
    if (mount.version === 2) {
      writeFileSync(file('memory.max'), String(limitBytes));
      if (existsSync(file('memory.swap.max'))) writeFileSync(file('memory.swap.max'), '0');
    } else {
      writeFileSync(file('memory.limit_in_bytes'), String(limitBytes));
      // memsw counts memory and swap together: equal to the cap, it allows no swap beyond it.
      if (existsSync(file('memory.memsw.limit_in_bytes'))) writeFileSync(file('memory.memsw.limit_in_bytes'), String(limitBytes));
    }
  } catch (error) {
    rmdirSync(dir);
    throw error;
  }
  return {
    version: mount.version,
    dir,
    prefix: ['/bin/sh', '-c', 'echo $$ > "$0" && exec "$@"', file('cgroup.procs')],
    usageBytes: () => Number(read(file(mount.version === 2 ? 'memory.current' : 'memory.usage_in_bytes'))),
    peakBytes: () => {
      const path = file(mount.version === 2 ? 'memory.peak' : 'memory.max_usage_in_bytes');
      return existsSync(path) ? Number(read(path)) : undefined;
    },
    oomKills: () => {
      const kills = field(read(file(mount.version === 2 ? 'memory.events' : 'memory.oom_control')), 'oom_kill');
      return Number.isNaN(kills) ? undefined : kills;
    },
    stat: () => Object.fromEntries([...read(file('memory.stat')).matchAll(/^(\w+) (\d+)$/gm)].map(([, key, value]) => [key!, Number(value)])),
    remove: () => {
      for (let attempt = 0; ; attempt++) {
        try {
          rmdirSync(dir);
          return;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
          // EBUSY while a process of it is still exiting.
          if (attempt >= 50) throw new Error(`the cgroup ${dir} was not removed: ${(error as Error).message}`, { cause: error });
          pause(100);
        }
      }
    },
  };
}

/**
 * The memory.stat lines that say what held the memory: v1's `rss` (anonymous: heaps, chDB's
 * allocations, WebAssembly memory), `cache` (page cache: files read and written, mapped code),
 * `mapped_file` (the part of it mapped into the process: libchdb.so's code, LMDB's map), `shmem`;
 * v2's `anon`, `file`, `file_mapped`, `shmem` and `kernel`.
 */
export const MEMORY_STAT_KEYS = {
  1: ['rss', 'cache', 'mapped_file', 'shmem'],
  2: ['anon', 'file', 'file_mapped', 'shmem', 'kernel'],
} as const;

/**
 * Drops the page cache of files no process maps (GNU dd's `iflag=nocache count=0`), so that the
 * next process to read them is charged for their pages: a page of the page cache is charged to the
 * cgroup that first read it, and a library read before by a process elsewhere would be mapped by
 * the capped process for free. Pages still mapped somewhere stay. False when dd refused a file.
 */
export function dropPageCache(paths: string[]): boolean {
  return paths.every((path) => spawnSync('dd', [`if=${path}`, 'iflag=nocache', 'count=0', 'status=none'], { stdio: 'ignore' }).status === 0);
}
