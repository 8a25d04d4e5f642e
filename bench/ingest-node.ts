// A thin ingest node (SERVICE_ROLES=ingest) on Postgres, Redis and Kafka, as production runs its
// edges: its resident memory after start-up and a little traffic, what its health lists, and its
// subdomains' public page (forwarded to an API process). Needs the services of
// `scripts/services-up.sh` in the environment (`source .services/env`).
//   bash bench/run.sh ingest-node [redirects]
//
// It starts an `api` process on a fresh database (the migrations, the first-run admin, the link),
// seeds an owner, a subdomain and a link through it, then starts the ingest node beside it with
// PUBLIC_PAGES_UPSTREAM pointing at the API, waits for its health, sends `redirects` redirects
// (default 100) and asks for the subdomain's public page through it. After a 2 s pause it reads
// /proc/<pid>/status: VmRSS (resident now), split into RssAnon (the process's own memory) and
// RssFile (pages of mapped files: code, and the durable log's LMDB map as far as it is resident),
// and VmHWM (the peak). Then it leaves the node idle for 30 s, reading its resident size every 5 s:
// the last reading is its idle size, and its CPU time over those 30 s its idle cost. Target (issue 35): idles at ≤ 120 MB resident.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { PROJECT_ROOT } from '#shared/paths.js';
import { serverDatabase } from '#tests/support/fresh-database.js';
import { threadsOf, threadsPer } from './lib/proc.js';
import { ADMIN, BROWSER_UA, freePort, health, killAll, seed, startProcess, waitHealthy } from '#tests/support/platform-process.js';

const redirects = Number(process.argv[2] ?? 100);
if (!Number.isInteger(redirects) || redirects < 1) {
  console.error('usage: bash bench/run.sh ingest-node [redirects ≥ 1]');
  process.exit(1);
}
if (!process.env.DATABASE_URL || !process.env.KAFKA_BROKERS) {
  console.error('an ingest node runs on Postgres and Kafka: start them with scripts/services-up.sh and `source` its env file first');
  process.exit(1);
}
const TARGET_MB = 120;
/** How long the node is left idle after the traffic before its idle size is read. */
const IDLE_S = 30;

/** The process's CPU time so far (user + kernel, all threads), in ms, from /proc/<pid>/stat. */
function cpuMsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /s, '')
    .split(' ');
  // After the command's closing parenthesis: state is field 0, utime 11, stime 12 (clock ticks, 100/s).
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** A line of /proc/<pid>/status in MB. */
function memoryOf(pid: number, field: 'VmHWM' | 'VmRSS' | 'RssAnon' | 'RssFile'): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : NaN;
}

/** A GET with the Host of a short host (fetch sets its own Host): status, type and body. */
function get(port: number, host: string, path: string): Promise<{ status: number; contentType: string; body: string }> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path, headers: { host, 'user-agent': BROWSER_UA } }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode!, contentType: String(response.headers['content-type'] ?? ''), body }));
    })
      .on('error', reject)
      .end();
  });
}

const database = await serverDatabase(process.env.DATABASE_URL, 'bench_ingest');
const dirs = [mkdtempSync(join(tmpdir(), 'linktrack-bench-api-')), mkdtempSync(join(tmpdir(), 'linktrack-bench-edge-'))];
try {
  const entry = join(PROJECT_ROOT, 'dist-bench/services/main.js');
  const common = {
    NODE_ENV: 'production',
    DATABASE_URL: database.url,
    CLICKHOUSE_URL: '',
    KAFKA_TOPIC_PREFIX: `bench${Date.now()}.`,
    SECRETS_KEY: process.env.SECRETS_KEY || Buffer.alloc(32, 7).toString('base64'),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
    // The edge hands the API its visitors' address: the API counts a public page's reader by it.
    TRUST_PROXY: '127.0.0.1/32',
  };
  const apiPort = await freePort();
  const api = startProcess({ ...common, SERVICE_ROLES: 'api', DATA_DIR: dirs[0]!, PORT: String(apiPort) }, [entry]);
  await waitHealthy(api, { timeoutMs: 120_000 });
  const seeded = await seed(apiPort);

  const edgePort = await freePort();
  const spawned = performance.now();
  const edge = startProcess(
    { ...common, SERVICE_ROLES: 'ingest', DATA_DIR: dirs[1]!, PORT: String(edgePort), PUBLIC_PAGES_UPSTREAM: `http://127.0.0.1:${apiPort}` },
    [entry],
  );
  await waitHealthy(edge, { timeoutMs: 120_000 });
  const healthyMs = performance.now() - spawned;
  const pid = edge.child.pid!;
  const atStart = memoryOf(pid, 'VmRSS');
  const checks = Object.entries((await health(edgePort))!.json.data.checks as Record<string, { kind: string; status: string }>)
    .map(([name, check]) => `${name}: ${check.kind} ${check.status}`)
    .join(', ');

  const statuses = new Map<number, number>();
  for (let sent = 0; sent < redirects; sent++) {
    const { status } = await get(edgePort, seeded.host, `/${seeded.slug}`);
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
  }
  const page = await get(edgePort, seeded.host, '/');
  await sleep(2_000);

  const figures = {
    rss: memoryOf(pid, 'VmRSS'),
    anon: memoryOf(pid, 'RssAnon'),
    file: memoryOf(pid, 'RssFile'),
    peak: memoryOf(pid, 'VmHWM'),
  };
  console.log(`ingest node (SERVICE_ROLES=ingest, services mode), healthy in ${healthyMs.toFixed(0)} ms`);
  console.log(`  health checks: ${checks}`);
  console.log(`  redirects: ${[...statuses].map(([status, count]) => `${count} × ${status}`).join(', ')}`);
  console.log(`  public page through the edge: ${page.status} ${page.contentType} (${page.body.length} bytes)`);
  console.log(`  resident after start-up: ${atStart.toFixed(1)} MB`);
  console.log(
    `  resident 2 s after ${redirects} redirects and the page: ${figures.rss.toFixed(1)} MB (own ${figures.anon.toFixed(1)} MB, mapped files ${figures.file.toFixed(1)} MB), peak ${figures.peak.toFixed(1)} MB`,
  );
  // Idle: V8's memory reducer gives the young generation's pages back once the process has been
  // quiet for a while (about 10–20 s here); the node's idle size is what it holds after that.
  const idle: number[] = [];
  const idleCpuFrom = cpuMsOf(pid);
  const idleThreadsFrom = threadsOf(pid);
  const idleCpuSteps = [idleCpuFrom];
  const idleFrom = performance.now();
  for (let waited = 5; waited <= IDLE_S; waited += 5) {
    await sleep(5_000);
    idle.push(memoryOf(pid, 'VmRSS'));
    idleCpuSteps.push(cpuMsOf(pid));
  }
  const idleRss = idle.at(-1)!;
  const idleCpu = (cpuMsOf(pid) - idleCpuFrom) / (performance.now() - idleFrom);
  const idleThreads = threadsPer(idleThreadsFrom, threadsOf(pid), (performance.now() - idleFrom) / 1000);
  console.log(`  resident while idle, every 5 s for ${IDLE_S} s: ${idle.map((mb) => mb.toFixed(1)).join(', ')} MB`);
  console.log(
    `  idle after ${IDLE_S} s: ${idleRss.toFixed(1)} MB (own ${memoryOf(pid, 'RssAnon').toFixed(1)} MB); target ≤ ${TARGET_MB} MB: ${idleRss <= TARGET_MB ? 'met' : 'NOT met'}`,
  );
  console.log(
    `  CPU ms in each 5 s while idle: ${idleCpuSteps
      .slice(1)
      .map((ms, i) => ms - idleCpuSteps[i]!)
      .join(', ')}`,
  );
  console.log(`  CPU while idle: ${(idleCpu * 100).toFixed(2)} % of a core (${(idleCpu * 1000).toFixed(1)} ms a second, every thread)`);
  console.log(
    `  idle by thread, µs a second: ${idleThreads
      .filter(([, us]) => us > 0)
      .map(([name, us]) => `${name} ${us.toFixed(0)}`)
      .join(', ')}`,
  );
  const started = performance.now();
  edge.child.kill('SIGTERM');
  console.log(`  stopped with SIGTERM: exit ${await edge.exited} in ${(performance.now() - started).toFixed(0)} ms`);
} finally {
  killAll();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  await database.drop().catch((error: unknown) => console.error(`the bench's database was not dropped: ${(error as Error).message}`));
}
