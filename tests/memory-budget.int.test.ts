// The memory budget (issue 37) reaches the engines of a real process: a process that opens the
// platform's stores with MEMORY_LIMIT_MB set hands chDB its server and query settings and PGlite its
// shared_buffers, and a first start on an empty DATA_DIR does not keep initdb's memory.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { memoryBudget } from '#shared/memory-budget.js';
import { PROJECT_ROOT } from '#shared/paths.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
});

interface Taken {
  settings: Record<string, string>;
  sharedBuffers: string;
  peakMb: number;
}

/** Opens the stores in a process of their own (chDB binds one data directory per process) on `dataDir`, with `env` on top. */
async function storesOpenedWith(dataDir: string, env: Record<string, string>): Promise<Taken> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'tests/support/memory-budget-child.ts')], {
    cwd: PROJECT_ROOT,
    env: {
      ...process.env,
      DATABASE_URL: '',
      CLICKHOUSE_URL: '',
      KAFKA_BROKERS: '',
      REDIS_URL: '',
      SECRETS_KEY: '',
      LOG_LEVEL: 'silent',
      DATA_DIR: dataDir,
      ...env,
    },
    timeout: 120_000,
  });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as Taken;
}

describe('memory budget', () => {
  it('MEMORY_LIMIT_MB=512 reaches chDB (server and query settings) and PGlite, on a first start and a restart', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'linktrack-budget-'));
    dirs.push(dataDir);
    const expected = memoryBudget(512, 'MEMORY_LIMIT_MB');
    for (const _start of ['first', 'restart']) {
      const taken = await storesOpenedWith(dataDir, { MEMORY_LIMIT_MB: '512' });
      expect(taken.settings).toEqual({
        primary_index_cache_size: String(expected.chdb.server.primary_index_cache_size),
        mark_cache_size: String(expected.chdb.server.mark_cache_size),
        background_pool_size: '1',
        max_threads: '1',
      });
      expect(taken.sharedBuffers).toBe('16MB');
    }
  }, 240_000);

  it("a first start on an empty DATA_DIR leaves initdb's memory (about 750 MB of WebAssembly memory) out of the process", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'linktrack-budget-'));
    dirs.push(dataDir);
    const taken = await storesOpenedWith(dataDir, {});
    // chDB's library and engine (about 270 MB) and PGlite reopened (about 150 MB) on top of Node; with
    // initdb in the process its WebAssembly memory alone peaked at about 750 MB.
    expect(taken.peakMb).toBeLessThan(700);
  }, 240_000);
});
