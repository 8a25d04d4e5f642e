// The one-process platform (as `make run` starts it, from source, on embedded stores) killed under
// load — SIGKILL, then SIGTERM — and restarted on the same DATA_DIR: every visit answered is stored,
// exactly once (issue 24). Each test prints a `FAULT_ROW {…}` line: the table of faults in
// docs/operations.md comes from these runs (the services run's faults are in tests/faults.int.test.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { SERVICES_MODE } from './support/context.js';
import { ADMIN, faultRow, freePort, killAll, load, publishDelay, seed, settledCounts, startProcess, waitHealthy } from './support/platform-process.js';

const EMBEDDED = { DATABASE_URL: '', REDIS_URL: '', KAFKA_BROKERS: '', CLICKHOUSE_URL: '', SECRETS_KEY: '', SECRETS_KEY_PREVIOUS: '' };
/** Load per test: connections kept busy, and how long. */
const CONNECTIONS = 16;
const LOAD_MS = 3_000;
/**
 * The durability window docs/operations.md states for a SIGKILL: a visit answered longer ago than the edge's
 * publish delay is on disk. The delay is up to two group commits (VISIT_LOG_COMMIT_MS, 50 ms: the
 * edge's batch waits for the one before it) plus the event loop's delay, which a saturated process
 * on a loaded 2-core machine stretches further: the window is what visit_log_publish_delay_seconds
 * measured up to the kill, at least this. The batch in flight at the kill is not measured yet and may
 * be the slowest (a CI run lost visits 257 ms back with 250 ms the highest bucket measured): the
 * window is the bucket above the highest measured.
 */
const WINDOW_MS = 100;

const dirs: string[] = [];
afterEach(killAll);
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(SERVICES_MODE)('the one-process platform killed under load, restarted on the same DATA_DIR', () => {
  for (const signal of ['SIGKILL', 'SIGTERM'] as const) {
    it(`${signal}: every visit answered is stored, exactly once`, async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'linktrack-durability-'));
      dirs.push(dataDir);
      const port = await freePort();
      // Bursts off: one load client is one visitor, and the count is what matters here.
      const env = {
        ...EMBEDDED,
        DATA_DIR: dataDir,
        PORT: String(port),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
        ADMIN_EMAIL: ADMIN.email,
        ADMIN_PASSWORD: ADMIN.password,
        RATE_LIMIT_REDIRECT: '100000000:60',
        RATE_LIMIT_API: '100000:60',
        BURST_MAX_VISITS: '100000',
      };
      const first = startProcess(env);
      await waitHealthy(first);
      const { token, linkId, slug, host } = await seed(port);

      const traffic = load(port, host, `/${slug}`, { connections: CONNECTIONS });
      await new Promise((resolve) => setTimeout(resolve, LOAD_MS));
      const delay = await publishDelay(port);
      const killedAt = performance.now();
      first.child.kill(signal);
      await traffic.stop();
      const code = await first.exited;
      const answered = traffic.answered.length;
      expect(answered).toBeGreaterThan(1_000);
      if (signal === 'SIGTERM') {
        expect(code).toBe(0);
        expect(first.output()).toContain('message log drained');
      }

      const lastMs = (ms: number) => traffic.answered.filter((at) => at > killedAt - ms).length;
      // SIGTERM stores everything; SIGKILL may lose what was answered within the durability window.
      const windowMs = Math.max(WINDOW_MS, delay.next_ms);
      const atLeast = signal === 'SIGTERM' ? answered : answered - lastMs(windowMs);
      const restarted = Date.now();
      const second = startProcess(env);
      await waitHealthy(second);
      // Counted once the restarted enricher has consumed what the log kept, then read until stable.
      const settled = await settledCounts(port, token, linkId, Math.min(atLeast, Math.floor(answered * 0.9)), 60_000);
      const recoverMs = Date.now() - restarted;
      const lost = Math.max(0, answered - settled.rows);
      // The shortest span before the kill whose answers are as many as the visits lost: the loss fits in it.
      let lossSpanMs = 0;
      while (lastMs(lossSpanMs) < lost) lossSpanMs++;
      faultRow({
        fault: `one process, ${signal} under load`,
        sent: answered,
        stored: settled.rows,
        rollups: settled.rollups,
        duplicates: settled.rollups - settled.rows,
        lost,
        loss_within_last_ms: lossSpanMs,
        publish_delay_p99_ms: delay.p99_ms,
        publish_delay_max_ms: delay.max_ms,
        window_ms: signal === 'SIGTERM' ? 0 : windowMs,
        recover_ms: recoverMs,
      });
      // Exactly once: the rows and the rollups agree; nothing answered before the window is missing.
      expect(settled.rollups).toBe(settled.rows);
      // The window stays bounded even when the machine is saturated.
      expect(delay.max_ms).toBeLessThanOrEqual(1_000);
      // A request the process took (and journaled: the edge journal) whose answer the kill cut off may be stored too: at most one per connection.
      expect(settled.rows).toBeLessThanOrEqual(answered + (signal === 'SIGKILL' ? CONNECTIONS : 0));
      expect(settled.rows).toBeGreaterThanOrEqual(atLeast);
      second.child.kill('SIGTERM');
      expect(await second.exited).toBe(0);
    }, 180_000);
  }
});
