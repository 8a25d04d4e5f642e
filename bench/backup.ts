// Measures `npm run backup` of a running one-process platform holding N visits: the command's time,
// where the platform spent it (the manifest's timings), the backup's size, and the redirects' rate
// during a backup under a load of 1 000 redirects/s against the second before it (same run).
//   npx tsx bench/backup.ts [visits=100000]
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { PROJECT_ROOT } from '#shared/paths.js';
import { ADMIN, freePort, killAll, load, seed, settledCounts, startProcess, waitHealthy } from '#tests/support/platform-process.js';

const visits = Number(process.argv[2] ?? 100_000);
const EMBEDDED = { DATABASE_URL: '', REDIS_URL: '', KAFKA_BROKERS: '', CLICKHOUSE_URL: '', SECRETS_KEY: '', SECRETS_KEY_PREVIOUS: '' };
const work = mkdtempSync(join(tmpdir(), 'linktrack-bench-backup-'));
const dataDir = join(work, 'data');

/** Runs the backup command into a new folder: its wall time and the manifest it wrote. */
async function backup(name: string) {
  const target = join(work, name);
  const started = performance.now();
  await promisify(execFile)(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'scripts/backup.ts'), target], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, ...EMBEDDED, DATA_DIR: dataDir },
  });
  const command_ms = Math.round(performance.now() - started);
  const manifest = JSON.parse(readFileSync(join(target, 'manifest.json'), 'utf8'));
  const bytes = Object.fromEntries((manifest.files as { path: string; bytes: number }[]).map((file) => [file.path, file.bytes]));
  return { command_ms, took_ms: manifest.took_ms, timings: manifest.timings, bytes, rows: manifest.analytics_rows.visits };
}

try {
  const port = await freePort();
  const platform = startProcess({
    ...EMBEDDED,
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
    RATE_LIMIT_REDIRECT: '100000000:60',
    BURST_MAX_VISITS: '100000',
  });
  await waitHealthy(platform, { timeoutMs: 120_000 });
  const seeded = await seed(port);
  const fill = load(port, seeded.host, `/${seeded.slug}`, { connections: 32 });
  while (fill.answered.length < visits) await sleep(200);
  await fill.stop();
  await settledCounts(port, seeded.token, seeded.linkId, fill.answered.length, 600_000);
  const idle = await backup('idle');

  const traffic = load(port, seeded.host, `/${seeded.slug}`, { connections: 10, ratePerSec: 1_000 });
  await sleep(1_000);
  const from = performance.now();
  await sleep(1_000);
  const triggered = performance.now();
  const loaded = await backup('loaded');
  const finished = performance.now();
  await traffic.stop();
  const rate = (start: number, end: number) => Math.round(traffic.answered.filter((at) => at >= start && at < end).length / ((end - start) / 1000));
  process.stdout.write(
    `${JSON.stringify({ visits: fill.answered.length, idle, loaded: { ...loaded, baseline_per_s: rate(from, triggered), during_per_s: rate(triggered, finished) } })}\n`,
  );
} finally {
  killAll();
  rmSync(work, { recursive: true, force: true });
}
