import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from './config.js';
import { cgroupLimitMb, chdbServerArgs, memoryBudget, memoryCgroupMounts, resolveMemoryLimit } from './memory-budget.js';

const MiB = 1_048_576;
const GiB = 1024 * MiB;
const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

/** A folder laid out like /sys/fs/cgroup with the given files. */
function cgroupRoot(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'linktrack-cgroup-'));
  roots.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

/** Mount lines of /proc/self/mountinfo as a host with both hierarchies (v1's memory controller, v2 without it) shows them. */
const HYBRID_MOUNTS = [
  '31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755',
  '32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu',
  '35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
  '41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
].join('\n');
/** A v2-only host (or a container with its own cgroup namespace): one cgroup2 mount. */
const V2_MOUNTS = '30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw,nsdelegate';
const NO_LIMIT_V1 = '9223372036854771712\n';

describe('cgroupLimitMb', () => {
  it("reads cgroup v1 memory.limit_in_bytes of the process's own cgroup, not the hierarchy's root", () => {
    const root = cgroupRoot({
      'proc/self/cgroup': '5:cpu:/\n4:memory:/bench/run-1\n0::/\n',
      'proc/self/mountinfo': HYBRID_MOUNTS,
      'sys/fs/cgroup/memory/memory.limit_in_bytes': NO_LIMIT_V1,
      'sys/fs/cgroup/memory/bench/memory.limit_in_bytes': NO_LIMIT_V1,
      'sys/fs/cgroup/memory/bench/run-1/memory.limit_in_bytes': `${1024 * MiB}\n`,
    });
    expect(cgroupLimitMb(root, 64 * GiB)).toBe(1024);
  });

  it('keeps the smallest limit of the cgroup and the cgroups above it (v1 and v2)', () => {
    const v1 = cgroupRoot({
      'proc/self/cgroup': '4:memory:/outer/inner\n0::/\n',
      'proc/self/mountinfo': HYBRID_MOUNTS,
      'sys/fs/cgroup/memory/outer/memory.limit_in_bytes': `${600 * MiB}\n`,
      'sys/fs/cgroup/memory/outer/inner/memory.limit_in_bytes': `${2 * GiB}\n`,
    });
    expect(cgroupLimitMb(v1, 64 * GiB)).toBe(600);
    const v2 = cgroupRoot({
      'proc/self/cgroup': '0::/system.slice/linktrack.service\n',
      'proc/self/mountinfo': V2_MOUNTS,
      'sys/fs/cgroup/system.slice/memory.max': `${1536 * MiB}\n`,
      'sys/fs/cgroup/system.slice/linktrack.service/memory.max': 'max\n',
    });
    expect(cgroupLimitMb(v2, 64 * GiB)).toBe(1536);
  });

  it("reads cgroup v2 memory.max in a container, whose cgroup is its mount's root", () => {
    const namespaced = cgroupRoot({
      'proc/self/cgroup': '0::/\n',
      'proc/self/mountinfo': V2_MOUNTS,
      'sys/fs/cgroup/memory.max': `${512 * MiB}\n`,
    });
    expect(cgroupLimitMb(namespaced, 64 * GiB)).toBe(512);
    // Without a cgroup namespace the container sees the host's path, and its mount's root is that path.
    const hostPath = cgroupRoot({
      'proc/self/cgroup': '4:memory:/docker/abc\n',
      'proc/self/mountinfo': '35 31 0:32 /docker/abc /sys/fs/cgroup/memory ro,relatime - cgroup cgroup rw,memory',
      'sys/fs/cgroup/memory/memory.limit_in_bytes': `${768 * MiB}\n`,
    });
    expect(cgroupLimitMb(hostPath, 64 * GiB)).toBe(768);
  });

  it('reads a mount point with an escaped space', () => {
    const root = cgroupRoot({
      'proc/self/cgroup': '0::/run\n',
      'proc/self/mountinfo': '30 23 0:26 / /sys/fs/cgroup\\040v2 rw - cgroup2 cgroup2 rw',
      'sys/fs/cgroup v2/run/memory.max': `${900 * MiB}\n`,
    });
    expect(cgroupLimitMb(root, 64 * GiB)).toBe(900);
  });

  it('finds no limit in v2 "max", in v1\'s page-aligned largest value, above the machine, in garbage, or without the files', () => {
    const v2 = (limit: string) =>
      cgroupLimitMb(cgroupRoot({ 'proc/self/cgroup': '0::/\n', 'proc/self/mountinfo': V2_MOUNTS, 'sys/fs/cgroup/memory.max': limit }), 64 * GiB);
    expect(v2('max\n')).toBeUndefined();
    expect(v2(`${128 * GiB}`)).toBeUndefined();
    expect(v2('garbage')).toBeUndefined();
    const v1 = cgroupRoot({
      'proc/self/cgroup': '4:memory:/\n',
      'proc/self/mountinfo': HYBRID_MOUNTS,
      'sys/fs/cgroup/memory/memory.limit_in_bytes': NO_LIMIT_V1,
    });
    expect(cgroupLimitMb(v1, 64 * GiB)).toBeUndefined();
    // A v1 limit in another controller's hierarchy (cpu) is not the memory controller's.
    const otherController = cgroupRoot({
      'proc/self/cgroup': '5:cpu:/run\n4:memory:/\n',
      'proc/self/mountinfo': HYBRID_MOUNTS,
      'sys/fs/cgroup/cpu/run/memory.limit_in_bytes': `${256 * MiB}`,
    });
    expect(cgroupLimitMb(otherController, 64 * GiB)).toBeUndefined();
    expect(cgroupLimitMb(cgroupRoot({}), 64 * GiB)).toBeUndefined();
  });
});

describe('memoryCgroupMounts', () => {
  it("lists v1's memory hierarchy and every cgroup2 mount, not v1's other controllers nor other file systems", () => {
    expect(memoryCgroupMounts(HYBRID_MOUNTS)).toEqual([
      { version: 1, point: '/sys/fs/cgroup/memory', root: '/' },
      { version: 2, point: '/sys/fs/cgroup/unified', root: '/' },
    ]);
    expect(memoryCgroupMounts(V2_MOUNTS)).toEqual([{ version: 2, point: '/sys/fs/cgroup', root: '/' }]);
    expect(memoryCgroupMounts('')).toEqual([]);
  });
});

describe('resolveMemoryLimit', () => {
  it('takes MEMORY_LIMIT_MB first, then the cgroup, then 1024 or the machine when it has less', () => {
    expect(resolveMemoryLimit(600, 2048, 64 * GiB)).toEqual({ limitMb: 600, source: 'MEMORY_LIMIT_MB' });
    expect(resolveMemoryLimit(undefined, 2048, 64 * GiB)).toEqual({ limitMb: 2048, source: 'cgroup' });
    expect(resolveMemoryLimit(undefined, undefined, 64 * GiB)).toEqual({ limitMb: 1024, source: 'default' });
    expect(resolveMemoryLimit(undefined, undefined, 700 * MiB)).toEqual({ limitMb: 700, source: 'default' });
  });
});

describe('memoryBudget', () => {
  it('sizes chDB and PGlite for 1 GiB: caches of a few MiB, threads by the cores, and leaves the engine its own memory limit', () => {
    const budget = memoryBudget(1024, 'default', 2);
    expect(budget.chdb.server).toMatchObject({
      mark_cache_size: 32 * MiB,
      index_mark_cache_size: 8 * MiB,
      primary_index_cache_size: 16 * MiB,
      background_pool_size: 2,
      background_schedule_pool_size: 2,
    });
    expect(budget.chdb.server).not.toHaveProperty('max_server_memory_usage');
    expect(budget.chdb.query).toEqual({ max_threads: 2 });
    expect(budget.pgliteSharedBuffersMb).toBe(32);
  });

  it('gives a small limit one thread and one merge, and keeps each size above its floor', () => {
    const budget = memoryBudget(256, 'MEMORY_LIMIT_MB', 8);
    expect(budget.chdb.query.max_threads).toBe(1);
    expect(budget.chdb.server.background_pool_size).toBe(1);
    expect(budget.chdb.server.mark_cache_size).toBe(8 * MiB);
    expect(budget.pgliteSharedBuffersMb).toBe(16);
  });

  it('grows with a large limit, threads bounded by the cores', () => {
    const budget = memoryBudget(16 * 1024, 'cgroup', 4);
    expect(budget.chdb.query.max_threads).toBe(4);
    expect(budget.chdb.server.background_pool_size).toBe(4);
    expect(budget.chdb.server.mark_cache_size).toBe(512 * MiB);
    expect(budget.pgliteSharedBuffersMb).toBe(128);
  });

  it('writes the server settings as chDB command-line arguments', () => {
    expect(chdbServerArgs({ mark_cache_size: 8 * MiB, background_pool_size: 1 })).toEqual([`--mark_cache_size=${8 * MiB}`, '--background_pool_size=1']);
  });
});

describe('MEMORY_LIMIT_MB', () => {
  it('sizes the embedded stores from the setting', () => {
    const config = loadConfig({ MEMORY_LIMIT_MB: '512' });
    expect(config.memory).toMatchObject({ limitMb: 512, source: 'MEMORY_LIMIT_MB' });
    expect(config.analytics).toMatchObject({ kind: 'chdb', budget: { query: { max_threads: 1 } } });
    expect(config.database).toMatchObject({ kind: 'pglite', sharedBuffersMb: 16 });
  });

  it('refuses a limit below 256 MiB or not an integer', () => {
    expect(() => loadConfig({ MEMORY_LIMIT_MB: '100' })).toThrow('MEMORY_LIMIT_MB must be an integer from 256 to 1048576');
    expect(() => loadConfig({ MEMORY_LIMIT_MB: '1.5G' })).toThrow('MEMORY_LIMIT_MB must be an integer from 256 to 1048576');
  });
});
