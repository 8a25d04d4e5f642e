import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from './config.js';
import { cgroupLimitMb, chdbServerArgs, memoryBudget, resolveMemoryLimit } from './memory-budget.js';

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

describe('cgroupLimitMb', () => {
  it('reads cgroup v2 memory.max', () => {
    expect(cgroupLimitMb(cgroupRoot({ 'memory.max': `${512 * MiB}\n` }), 64 * GiB)).toBe(512);
  });

  it('reads cgroup v1 memory.limit_in_bytes', () => {
    expect(cgroupLimitMb(cgroupRoot({ 'memory/memory.limit_in_bytes': `${768 * MiB}\n` }), 64 * GiB)).toBe(768);
  });

  it('finds no limit in v2 "max", in v1\'s page-aligned largest value, above the machine, or without the files', () => {
    expect(cgroupLimitMb(cgroupRoot({ 'memory.max': 'max\n' }), 64 * GiB)).toBeUndefined();
    expect(cgroupLimitMb(cgroupRoot({ 'memory/memory.limit_in_bytes': '9223372036854771712\n' }), 64 * GiB)).toBeUndefined();
    expect(cgroupLimitMb(cgroupRoot({ 'memory.max': `${128 * GiB}` }), 64 * GiB)).toBeUndefined();
    expect(cgroupLimitMb(cgroupRoot({}), 64 * GiB)).toBeUndefined();
    expect(cgroupLimitMb(cgroupRoot({ 'memory.max': 'garbage' }), 64 * GiB)).toBeUndefined();
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
