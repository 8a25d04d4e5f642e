// Backup and restore of a running one-process platform (issue 38): `npm run backup -- <dir>` asks the
// platform (a real process) over its control socket while it takes about 1 000 redirects a second;
// `npm run restore -- <dir>` writes the backup into a new DATA_DIR, and a second process started on
// it has every visit answered before the backup began, the same records, and reports that stand at
// the backup's checkpoint. The unhappy paths: a non-empty target, a non-empty DATA_DIR, a damaged file.
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '#shared/paths.js';
import { verifySignature } from '#shared/webhooks/signature.js';
import { SERVICES_MODE } from './support/context.js';
import {
  EMBEDDED_PLATFORM_ENV,
  client,
  freePort,
  killAll,
  load,
  seed,
  settledCounts,
  startProcess,
  storedCounts,
  waitHealthy,
} from './support/platform-process.js';

const dirs: string[] = [];
const tempDir = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
};

afterEach(() => killAll());
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Runs `npm run <script> -- <dir>` (its tsx script) with DATA_DIR, without blocking this process (the load goes on meanwhile). */
function run(script: 'backup' | 'restore', dir: string, dataDir: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', join(PROJECT_ROOT, `scripts/${script}.ts`), dir],
      { cwd: PROJECT_ROOT, env: { ...process.env, ...EMBEDDED_PLATFORM_ENV, DATA_DIR: dataDir }, timeout: 90_000 },
      (error, stdout, stderr) => resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** A webhook receiver keeping each delivery's raw body and signature. */
async function signedReceiver() {
  const deliveries: { body: string; signature: string | undefined; event: string }[] = [];
  const server: Server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      deliveries.push({ body, signature: req.headers['x-svc-signature'] as string | undefined, event: (JSON.parse(body) as { event: string }).event });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/hook`,
    deliveries,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

/** What the owner sees of their records, short URLs without the process's port. */
async function records(port: number, token: string, subdomain: string) {
  const call = client(port);
  const auth = { authorization: `Bearer ${token}` };
  const answers = {
    links: await call('GET', `/api/v1/links?subdomain=${subdomain}`, undefined, auth),
    webhooks: await call('GET', '/api/v1/webhooks', undefined, auth),
    subdomains: await call('GET', '/api/v1/subdomains', undefined, auth),
  };
  for (const answer of Object.values(answers)) expect(answer.status, JSON.stringify(answer.json)).toBe(200);
  return JSON.parse(
    JSON.stringify(Object.fromEntries(Object.entries(answers).map(([name, answer]) => [name, answer.json.data]))).replaceAll(`:${port}/`, ':PORT/'),
  );
}

describe.skipIf(SERVICES_MODE)('npm run backup and npm run restore of a running one-process platform', () => {
  it('restores every visit answered before the backup began, the same links, tokens, webhooks and subdomains, and reports at its checkpoint', async () => {
    const source = tempDir('linktrack-backup-source-');
    const receiver = await signedReceiver();
    try {
      const env = EMBEDDED_PLATFORM_ENV;
      const port = await freePort();
      const platform = startProcess({ ...env, DATA_DIR: source, PORT: String(port) });
      await waitHealthy(platform, { timeoutMs: 90_000 });
      // The control socket: only the platform's OS user may ask it for anything.
      expect(statSync(join(source, 'control.sock')).mode & 0o777).toBe(0o600);

      const seeded = await seed(port);
      const call = client(port);
      const auth = { authorization: `Bearer ${seeded.token}` };
      const hook = await call('POST', '/api/v1/webhooks', { url: receiver.url, events: ['link.created'], subdomain: seeded.subdomain }, auth);
      expect(hook.status, JSON.stringify(hook.json)).toBe(201);
      const secret = hook.json.data.secret as string;
      const still = await call('POST', '/api/v1/links', { subdomain: seeded.subdomain, target_url: 'https://example.com/still', slug: 'still' }, auth);
      expect(still.status).toBe(201);
      // Visits of a link that gets none during the backup: its report must read the same on both platforms.
      const early = load(port, seeded.host, '/still', { connections: 2, ratePerSec: 200 });
      await new Promise((resolve) => setTimeout(resolve, 500));
      await early.stop();
      await settledCounts(port, seeded.token, still.json.data.id, early.answered.length);

      // About 1 000 redirects a second, before, during and after the backup.
      const traffic = load(port, seeded.host, `/${seeded.slug}`, { connections: 10, ratePerSec: 1_000 });
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const baselineFrom = performance.now();
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const backupDir = join(tempDir('linktrack-backup-'), 'taken');
      const triggered = performance.now();
      const backup = await run('backup', backupDir, source);
      const finished = performance.now();
      await new Promise((resolve) => setTimeout(resolve, 500));
      await traffic.stop();
      expect(backup.stderr + backup.stdout).toMatch(/taken by the running platform/);
      expect(backup.code).toBe(0);
      const answeredBefore = traffic.answered.filter((at) => at < triggered).length;
      const answeredBy = traffic.answered.filter((at) => at <= finished).length;
      const during = answeredBy - answeredBefore;
      // The load went on during the backup (the redirects do not wait for it): its rate against the
      // second before it, on this machine in this run (the backup command's start shares the cores).
      const baseline = traffic.answered.filter((at) => at >= baselineFrom && at < triggered).length / ((triggered - baselineFrom) / 1000);
      const rate = during / ((finished - triggered) / 1000);
      process.stdout.write(
        `BACKUP_LOAD ${JSON.stringify({ baseline_per_s: Math.round(baseline), during_per_s: Math.round(rate), backup_ms: Math.round(finished - triggered) })}\n`,
      );
      expect(rate / baseline).toBeGreaterThan(0.5);
      expect([...traffic.refused.keys()]).toEqual([]);

      const manifest = JSON.parse(readFileSync(join(backupDir, 'manifest.json'), 'utf8'));
      expect(manifest.platform).toBe('running');
      // As private as DATA_DIR: it may hold the secrets key.
      expect(statSync(backupDir).mode & 0o777).toBe(0o700);
      for (const name of readdirSync(backupDir)) expect(statSync(join(backupDir, name)).mode & 0o777, name).toBe(0o600);
      expect(manifest.files.map((file: { path: string }) => file.path).sort()).toEqual(['analytics.tar', 'database.tar.gz', 'secrets.key']);
      const checkpoint = manifest.checkpoint.find((entry: { topic: string }) => entry.topic === 'visits.raw').offset as number;
      const sourceRecords = await records(port, seeded.token, seeded.subdomain);
      const stillReport = await call('GET', `/api/v1/stats/link/${still.json.data.id}?since=2020-01-01T00:00:00Z`, undefined, auth);

      // Unhappy paths: a target that holds anything, a DATA_DIR that holds anything, a damaged file.
      const again = await run('backup', backupDir, source);
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/the backup folder .* is not empty/);
      expect(readdirSync(backupDir).sort()).toEqual(['analytics.tar', 'database.tar.gz', 'manifest.json', 'secrets.key']);
      const busy = await run('restore', backupDir, source);
      expect(busy.code).toBe(1);
      expect(busy.stderr).toMatch(/a platform is running on DATA_DIR/);
      const damagedDir = join(tempDir('linktrack-backup-damaged-'), 'copy');
      cpSync(backupDir, damagedDir, { recursive: true });
      const file = join(damagedDir, 'database.tar.gz');
      const bytes = readFileSync(file);
      bytes[bytes.length >> 1] = bytes[bytes.length >> 1]! ^ 0xff;
      writeFileSync(file, bytes);
      const intoDamaged = join(tempDir('linktrack-restore-damaged-'), 'data');
      const damaged = await run('restore', damagedDir, intoDamaged);
      expect(damaged.code).toBe(1);
      expect(damaged.stderr).toMatch(/database\.tar\.gz does not match the manifest \(sha256 differs\)/);
      expect(existsSync(intoDamaged)).toBe(false);

      const restoredDir = join(tempDir('linktrack-restored-'), 'data');
      const restored = await run('restore', backupDir, restoredDir);
      expect(restored.stderr).toBe('');
      expect(restored.code).toBe(0);
      const twice = await run('restore', backupDir, restoredDir);
      expect(twice.code).toBe(1);
      expect(twice.stderr).toMatch(/DATA_DIR .* is not empty/);

      // The restored platform, on another port, beside the source.
      const port2 = await freePort();
      const copy = startProcess({ ...env, DATA_DIR: restoredDir, PORT: String(port2) });
      await waitHealthy(copy, { timeoutMs: 90_000 });
      const status = await client(port2)('GET', '/api/v1/status');
      expect(status.json.data.schema).toEqual(manifest.schema);
      // The token (kept by its hash) authenticates, and the records read the same.
      expect(await records(port2, seeded.token, seeded.subdomain)).toEqual(sourceRecords);
      const stillRestored = await client(port2)('GET', `/api/v1/stats/link/${still.json.data.id}?since=2020-01-01T00:00:00Z`, undefined, auth);
      expect(stillRestored.json.data).toEqual(stillReport.json.data);
      // Every redirect answered before the backup began is there; the report and the visit list agree,
      // and together with the other link they are exactly the visits below the checkpoint.
      const loadRestored = await storedCounts(port2, seeded.token, seeded.linkId);
      const stillCounts = await storedCounts(port2, seeded.token, still.json.data.id);
      expect(loadRestored.rows).toBeGreaterThanOrEqual(answeredBefore);
      expect(loadRestored.rows).toBeLessThanOrEqual(answeredBy);
      expect(loadRestored.rollups).toBe(loadRestored.rows);
      expect(loadRestored.rows + stillCounts.rows).toBe(checkpoint);
      // The webhook's secret came back sealed with the key the backup holds: a signed test delivery verifies.
      const test = await client(port2)('POST', `/api/v1/webhooks/${hook.json.data.id}/test`, undefined, auth);
      expect(test.status, JSON.stringify(test.json)).toBe(200);
      const delivered = receiver.deliveries.find((delivery) => delivery.event === 'webhook.test');
      expect(delivered).toBeDefined();
      expect(verifySignature(secret, delivered!.body, delivered!.signature)).toBe(true);

      // Stopped, the platform is backed up by the command itself, which opens DATA_DIR.
      platform.child.kill('SIGTERM');
      expect(await platform.exited).toBe(0);
      const stoppedDir = join(tempDir('linktrack-backup-stopped-'), 'taken');
      const stopped = await run('backup', stoppedDir, source);
      expect(stopped.stderr).toBe('');
      expect(stopped.stdout).toMatch(/the platform is stopped/);
      expect(JSON.parse(readFileSync(join(stoppedDir, 'manifest.json'), 'utf8')).platform).toBe('stopped');
      process.stdout.write(
        `BACKUP_FIGURES ${JSON.stringify({ answeredBefore, during, checkpoint, took_ms: manifest.took_ms, timings: manifest.timings, files: manifest.files })}\n`,
      );
    } finally {
      await receiver.close();
    }
  }, 180_000);
});
