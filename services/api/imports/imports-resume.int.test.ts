// An import job interrupted mid-way: the one-process platform (from source, on embedded stores) is
// killed (SIGKILL) or stopped (SIGTERM) while it imports 1 000 links, then started again on the same
// DATA_DIR: the job goes on from its last checkpoint and completes, and no link is created twice.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { SERVICES_MODE } from '#tests/support/context.js';
import { shlinkCsv, sourceLinks } from '#tests/support/import-fixtures.js';
import { client, EMBEDDED_PLATFORM_ENV, freePort, killAll, seed, startProcess, waitHealthy } from '#tests/support/platform-process.js';

const dirs: string[] = [];
afterEach(killAll);
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(SERVICES_MODE)('an import job interrupted by the end of its process', () => {
  for (const signal of ['SIGKILL', 'SIGTERM'] as const) {
    it(`${signal} mid-import: restarted on the same DATA_DIR, the import completes from its checkpoint without a duplicate`, async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'linktrack-import-resume-'));
      dirs.push(dataDir);
      const port = await freePort();
      const env = { ...EMBEDDED_PLATFORM_ENV, DATA_DIR: dataDir, PORT: String(port), RATE_LIMIT_API: '100000:60', LOG_LEVEL: 'info' };
      const first = startProcess(env);
      await waitHealthy(first);
      const { token, subdomain } = await seed(port);
      const call = client(port);
      const auth = { authorization: `Bearer ${token}` };

      const started = await call('POST', '/api/v1/imports', { source: 'shlink', subdomain, file: shlinkCsv(sourceLinks(1000, 'rz')) }, auth);
      expect(started.status).toBe(202);
      const id = started.json.data.id as string;
      const state = async () => (await call('GET', `/api/v1/imports/${id}?rows_limit=0`, undefined, auth)).json.data;
      let before = await state();
      while (before.rows_read < 150) {
        expect(before.status).not.toBe('completed');
        await sleep(100);
        before = await state();
      }
      first.child.kill(signal);
      const code = await first.exited;
      if (signal === 'SIGTERM') expect(code).toBe(0);

      const second = startProcess(env);
      await waitHealthy(second);
      const resumedFrom = (await state()).rows_read;
      // A SIGTERM checkpoints the row in flight; a SIGKILL loses at most what followed the last checkpoint.
      expect(resumedFrom).toBeGreaterThanOrEqual(before.rows_read);
      expect(resumedFrom).toBeLessThan(1000);
      let after = await state();
      const deadline = Date.now() + 300_000;
      while (after.status !== 'completed' && after.status !== 'failed' && Date.now() < deadline) {
        await sleep(250);
        after = await state();
      }
      expect(after).toMatchObject({ status: 'completed', rows_total: 1000, rows_read: 1000, error: null });
      // Every row has its report once; a row imported after the last checkpoint of the first run reports `exists`.
      expect(after.counts.created + after.counts.exists).toBe(1000);
      expect(after.counts.created).toBeGreaterThanOrEqual(resumedFrom);
      if (signal === 'SIGTERM') expect(after.counts.exists).toBe(0);
      const report = (await call('GET', `/api/v1/imports/${id}?rows_limit=1000`, undefined, auth)).json.data.rows as { line: number }[];
      expect(report.map((row) => row.line)).toEqual(Array.from({ length: 1000 }, (_, i) => i + 2));
      // The seed's link and the 1 000 imported ones: none twice.
      const links = await call('GET', `/api/v1/links?subdomain=${subdomain}&limit=1`, undefined, auth);
      expect(links.json.meta.total).toBe(1001);
      process.stdout.write(`import interrupted by ${signal} at row ${before.rows_read}: resumed from its checkpoint at row ${resumedFrom}, completed\n`);
    }, 600_000);
  }
});
