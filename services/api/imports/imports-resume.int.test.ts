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
import { shlinkVisits, startShlinkStandIn } from '#tests/support/shlink-stand-in.js';
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

describe.skipIf(SERVICES_MODE)('an import from a source’s API interrupted by SIGKILL (a local Shlink stand-in)', () => {
  it('restarted on the same DATA_DIR, the import completes from its checkpoint with no link and no visit twice', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'linktrack-import-resume-'));
    dirs.push(dataDir);
    const links = sourceLinks(800, 'rk');
    const visits = new Map(links.map((link) => [link.slug, shlinkVisits(link.slug, 5, Date.UTC(2024, 5, 30, 12))]));
    const shlink = await startShlinkStandIn(links, visits);
    try {
      const port = await freePort();
      // The stand-in listens on loopback: the operator's allowance, as for a self-hosted source.
      const env = { ...EMBEDDED_PLATFORM_ENV, DATA_DIR: dataDir, PORT: String(port), RATE_LIMIT_API: '100000:60', WEBHOOK_ALLOWLIST: '127.0.0.1' };
      const first = startProcess(env);
      await waitHealthy(first);
      const { token, subdomain } = await seed(port);
      const call = client(port);
      const auth = { authorization: `Bearer ${token}` };
      const started = await call('POST', '/api/v1/imports', { source: 'shlink-api', subdomain, url: shlink.url, api_key: shlink.apiKey }, auth);
      expect(started.status).toBe(202);
      const id = started.json.data.id as string;
      const state = async () => (await call('GET', `/api/v1/imports/${id}?rows_limit=0`, undefined, auth)).json.data;
      let before = await state();
      while (before.rows_read < 100) {
        expect(before.status).not.toBe('completed');
        await sleep(100);
        before = await state();
      }
      first.child.kill('SIGKILL');
      await first.exited;

      const second = startProcess(env);
      await waitHealthy(second);
      const resumedFrom = (await state()).rows_read;
      expect(resumedFrom).toBeGreaterThanOrEqual(before.rows_read);
      expect(resumedFrom).toBeLessThan(800);
      let after = await state();
      const deadline = Date.now() + 300_000;
      while (after.status !== 'completed' && after.status !== 'failed' && Date.now() < deadline) {
        await sleep(250);
        after = await state();
      }
      expect(after).toMatchObject({ status: 'completed', rows_total: 800, rows_read: 800, error: null });
      expect(after.counts.created + after.counts.exists).toBe(800);
      // Each link's visits are counted once: added, or found (existing) when its link is imported again after the checkpoint.
      expect(after.visits.added + after.visits.existing).toBe(4000);
      expect(after.visits.added).toBeGreaterThanOrEqual(resumedFrom * 5);
      const report = (await call('GET', `/api/v1/imports/${id}?rows_limit=1000`, undefined, auth)).json.data.rows as { line: number }[];
      expect(report.map((row) => row.line)).toEqual(Array.from({ length: 800 }, (_, i) => i + 2));
      const listed = await call('GET', `/api/v1/links?subdomain=${subdomain}&limit=1`, undefined, auth);
      expect(listed.json.meta.total).toBe(801);
      // The same source imported again: nothing new.
      const again = await call('POST', '/api/v1/imports', { source: 'shlink-api', subdomain, url: shlink.url, api_key: shlink.apiKey }, auth);
      const againId = again.json.data.id as string;
      let repeat = (await call('GET', `/api/v1/imports/${againId}?rows_limit=0`, undefined, auth)).json.data;
      // Its own time: the first import may have used most of its deadline on a loaded machine.
      const repeatDeadline = Date.now() + 300_000;
      while (repeat.status !== 'completed' && repeat.status !== 'failed' && Date.now() < repeatDeadline) {
        await sleep(250);
        repeat = (await call('GET', `/api/v1/imports/${againId}?rows_limit=0`, undefined, auth)).json.data;
      }
      expect(repeat).toMatchObject({ status: 'completed', counts: { created: 0, exists: 800 }, visits: { added: 0, existing: 4000 } });
      process.stdout.write(
        `import from the Shlink stand-in killed at link ${before.rows_read}: resumed from its checkpoint at link ${resumedFrom}, completed\n`,
      );
    } finally {
      await shlink.close();
    }
  }, 600_000);
});
