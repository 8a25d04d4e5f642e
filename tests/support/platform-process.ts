// The platform as separate processes, driven over HTTP as a real client would: start a process of
// some roles from source, seed an owner through the API, load it with redirects, count what was
// stored and what webhooks received. Used by the durability and fault-injection suites.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer as createHttpServer, Agent, request, type Server } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { PROJECT_ROOT } from '#shared/paths.js';
import { waitFor } from './wait.js';

/** The first-start admin of every process these suites start. */
export const ADMIN = { email: 'durability@example.com', password: 'durability test password' };

/** A browser's user agent: the load's visits are people's visits (not bots), so they raise `visit.new`. */
/** No server stores, whatever the environment of the run: the platform opens PGlite, chDB and LMDB, with its key in DATA_DIR. */
export const EMBEDDED_STORES = { DATABASE_URL: '', REDIS_URL: '', KAFKA_BROKERS: '', CLICKHOUSE_URL: '', SECRETS_KEY: '', SECRETS_KEY_PREVIOUS: '' };

/**
 * The environment of a one-process platform on embedded stores, whatever the test run's own
 * (services mode sets DATABASE_URL and the like): its admin, no rate limits in the way, and webhook
 * deliveries allowed to a receiver on loopback. Add DATA_DIR and PORT.
 */
export const EMBEDDED_PLATFORM_ENV = {
  ...EMBEDDED_STORES,
  HOST: '127.0.0.1',
  ADMIN_EMAIL: ADMIN.email,
  ADMIN_PASSWORD: ADMIN.password,
  RATE_LIMIT_REDIRECT: '100000000:60',
  BURST_MAX_VISITS: '100000',
  WEBHOOK_ALLOWLIST: '127.0.0.1',
};

export const BROWSER_UA = 'Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0';

/** A loopback port nothing listens on now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface Started {
  child: ChildProcess;
  port: number;
  output: () => string;
  exited: Promise<number | null>;
}

/** Processes started here: killed after each test by `killAll` (a test that fails leaves none behind). */
const children: ChildProcess[] = [];
/** The same, with their output, for `exitedOutput`. */
const started: Started[] = [];

/**
 * Starts `services/main.ts` (from source, as `make run` does once built) with the environment given on
 * top of this one; `command` replaces node's arguments (a benchmark starts the compiled entry point),
 * and `prefix` runs node through a command that execs it, keeping its pid (a cgroup's, `taskset`).
 */
export function startProcess(
  env: Record<string, string>,
  command = ['--import', 'tsx', join(PROJECT_ROOT, 'services/main.ts')],
  prefix: string[] = [],
): Started {
  const [executable, ...args] = [...prefix, process.execPath, ...command];
  const child = spawn(executable!, args, {
    cwd: PROJECT_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const process_ = { child, port: Number(env.PORT), output: () => output, exited };
  started.push(process_);
  return process_;
}

/**
 * The last lines of every process started here that exited by itself (not killed by a test), for
 * the report of a test that failed: a process that died under a fault says why.
 */
export function exitedOutput(): string {
  return started
    .filter(({ child }) => child.exitCode !== null || (child.signalCode !== null && child.signalCode !== 'SIGKILL' && child.signalCode !== 'SIGTERM'))
    .map(({ child, port, output }) => `process on port ${port} exited (${child.exitCode ?? child.signalCode}):\n${output().split('\n').slice(-40).join('\n')}`)
    .join('\n');
}

/** SIGKILLs every process `startProcess` started that still runs. */
export function killAll(): void {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  started.length = 0;
}

export interface Answer {
  status: number;
  headers: Headers;
  /** The JSON answer, read by the tests field by field. */
  json: any;
}

/** The origin of a process: its loopback port, or a base URL as given. */
const baseOf = (target: number | string) => (typeof target === 'number' ? `http://127.0.0.1:${target}` : target.replace(/\/+$/, ''));

/** An HTTP client of a process (its loopback port, or a base URL): JSON in and out, with the session cookie or token it is given. */
export function client(target: number | string) {
  const base = baseOf(target);
  return async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> => {
    const response = await fetch(base + path, {
      method,
      headers: { origin: base, ...(body ? { 'content-type': 'application/json' } : {}), ...headers },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(20_000),
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, json: text ? JSON.parse(text) : undefined };
  };
}

/** The process's health: its HTTP status and envelope (undefined while it does not answer). */
export async function health(port: number): Promise<Answer | undefined> {
  try {
    return await client(port)('GET', '/api/v1/health');
  } catch {
    return undefined;
  }
}

/** Waits until the process answers its health probe with 200 (ok, or degraded when `degraded` is allowed). */
export async function waitHealthy(started: Started, { timeoutMs = 60_000, degraded = false } = {}): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    // A process that exited will not become healthy: its output says why.
    if (started.child.exitCode !== null) throw new Error(`exited ${started.child.exitCode}: ${started.output().slice(-3_000)}`);
    const answer = await health(started.port);
    if (answer?.status === 200 && (degraded || answer.json.data.status === 'ok')) return;
    if (Date.now() > deadline)
      throw new Error(
        `no healthy process on port ${started.port} within ${timeoutMs} ms (last: ${answer?.status} ${JSON.stringify(answer?.json)}): ${started.output().slice(-3_000)}`,
      );
    await sleep(200);
  }
}

export interface Seeded {
  token: string;
  subdomain: string;
  linkId: string;
  slug: string;
  /** The short host of the subdomain (BASE_DOMAIN localhost). */
  host: string;
}

/**
 * Signs in as the first-start admin, mints a token, claims a subdomain, makes a link on it and,
 * when a receiver URL is given, subscribes it to `visit.new` of that subdomain.
 */
export async function seed(port: number, { webhookUrl }: { webhookUrl?: string } = {}): Promise<Seeded> {
  const call = client(port);
  const login = await call('POST', '/auth/login', ADMIN);
  if (login.status !== 200) throw new Error(`login: ${login.status} ${JSON.stringify(login.json)}`);
  const cookie = login.headers
    .getSetCookie()
    .map((value) => value.split(';')[0])
    .join('; ');
  const minted = await call('POST', '/api/v1/tokens', { name: 'faults', scopes: ['links:read', 'links:write', 'stats:read', 'subdomain:write'] }, { cookie });
  if (minted.status !== 201) throw new Error(`token: ${minted.status} ${JSON.stringify(minted.json)}`);
  const token = minted.json.data.token as string;
  const auth = { authorization: `Bearer ${token}` };
  const subdomain = `f${Math.random().toString(36).slice(2, 9)}`;
  const claimed = await call('POST', '/api/v1/subdomains', { name: subdomain }, auth);
  if (claimed.status !== 201) throw new Error(`subdomain: ${claimed.status} ${JSON.stringify(claimed.json)}`);
  const link = await call('POST', '/api/v1/links', { subdomain, target_url: 'https://example.com/landing', slug: 'load' }, auth);
  if (link.status !== 201) throw new Error(`link: ${link.status} ${JSON.stringify(link.json)}`);
  if (webhookUrl) {
    const hook = await call('POST', '/api/v1/webhooks', { url: webhookUrl, events: ['visit.new'], subdomain }, auth);
    if (hook.status !== 201) throw new Error(`webhook: ${hook.status} ${JSON.stringify(hook.json)}`);
  }
  return { token, subdomain, linkId: link.json.data.id, slug: 'load', host: `${subdomain}.localhost` };
}

export interface Load {
  /** The instant (performance.now) each 302 arrived. */
  answered: number[];
  /** Answers other than 302, by status, and requests that got no answer ('error'). */
  refused: Map<string, number>;
  stop(): Promise<void>;
}

/**
 * Redirects from `connections` keep-alive connections until `stop()`, at most `ratePerSec` in all
 * (0: as fast as answered). A request that gets no answer (the server died) is counted and its
 * connection goes on, unless `stopOnError`: then its loop ends (the process is gone).
 */
export function load(port: number, host: string, path: string, { connections = 16, ratePerSec = 0, stopOnError = true } = {}): Load {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const answered: number[] = [];
  const refused = new Map<string, number>();
  const count = (key: string) => refused.set(key, (refused.get(key) ?? 0) + 1);
  let stopped = false;
  const one = () =>
    new Promise<boolean>((resolve) => {
      const req = request({ host: '127.0.0.1', port, path, agent, timeout: 10_000, headers: { host, 'user-agent': BROWSER_UA } }, (response) => {
        response.resume();
        response.on('end', () => {
          if (response.statusCode === 302) answered.push(performance.now());
          else count(String(response.statusCode));
          resolve(true);
        });
      });
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', () => {
        count('error');
        resolve(!stopOnError);
      });
      req.end();
    });
  const pause = ratePerSec > 0 ? (connections * 1000) / ratePerSec : 0;
  const loops = Array.from({ length: connections }, async () => {
    while (!stopped) {
      const started = performance.now();
      if (!(await one())) break;
      if (pause > 0) await sleep(Math.max(0, pause - (performance.now() - started)));
    }
  });
  return {
    answered,
    refused,
    stop: async () => {
      stopped = true;
      await Promise.all(loops);
      agent.destroy();
    },
  };
}

/** Visits of the link as the owner's report counts them (the rollups) and as the visit list does (rows, deduplicated by id). */
export async function storedCounts(port: number, token: string, linkId: string): Promise<{ rollups: number; rows: number }> {
  return storedIn(port, token, { link_id: linkId });
}

/** The same for a link or a subdomain of the token's owner, on a process's port or a base URL. */
export async function storedIn(
  target: number | string,
  token: string,
  filter: { link_id: string } | { subdomain: string },
): Promise<{ rollups: number; rows: number }> {
  const call = client(target);
  const auth = { authorization: `Bearer ${token}` };
  const [scope, id] = 'link_id' in filter ? ['link', filter.link_id] : ['subdomain', filter.subdomain];
  const report = await call('GET', `/api/v1/stats/${scope}/${id}?since=2020-01-01T00:00:00Z`, undefined, auth);
  const list = await call('GET', `/api/v1/visits?${new URLSearchParams({ ...filter, limit: '1' })}`, undefined, auth);
  if (report.status !== 200 || list.status !== 200)
    throw new Error(`stats ${report.status} ${JSON.stringify(report.json)}, visits ${list.status} ${JSON.stringify(list.json)}`);
  const totals = report.json.data.totals as { visits: number; bots: number };
  return { rollups: totals.visits + totals.bots, rows: list.json.meta.total as number };
}

/** Waits until at least `atLeast` visits are stored, then until two reads 1.5 s apart agree; the settled counts. */
export async function settledCounts(port: number, token: string, linkId: string, atLeast: number, timeoutMs = 90_000) {
  await waitFor(async () => (await storedCounts(port, token, linkId)).rows >= atLeast, timeoutMs, {
    intervalMs: 200,
    message: `at least ${atLeast} visits stored`,
  });
  let settled = await storedCounts(port, token, linkId);
  for (;;) {
    await sleep(1_500);
    const again = await storedCounts(port, token, linkId);
    if (again.rows === settled.rows && again.rollups === settled.rollups) return settled;
    settled = again;
  }
}

/**
 * The edge's publish delay of visits so far (visit_log_publish_delay_seconds for visits.raw): the
 * upper bound (ms) of the bucket holding the 99th percentile, of the highest non-empty bucket, and
 * of the bucket above that one (the batch in flight when this is read is not counted yet: a
 * slower one than any before is bounded by the next bucket, not by the highest so far).
 */
export async function publishDelay(port: number): Promise<{ p99_ms: number; max_ms: number; next_ms: number }> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const buckets = [...text.matchAll(/^visit_log_publish_delay_seconds_bucket\{le="([^"]+)",topic="visits\.raw"\} (\d+)$/gm)].map((match) => ({
    le: match[1] === '+Inf' ? Infinity : Number(match[1]) * 1000,
    count: Number(match[2]),
  }));
  const total = buckets.at(-1)?.count ?? 0;
  const p99 = buckets.find((bucket) => bucket.count >= total * 0.99)?.le ?? NaN;
  const highest = buckets.findIndex((bucket) => bucket.count === total);
  const max = buckets[highest]?.le ?? NaN;
  const next = buckets[highest + 1]?.le ?? max;
  return { p99_ms: p99, max_ms: max, next_ms: next };
}

/** A metric's value summed over the series whose labels contain `labels` (e.g. `reason="buffer_full"`), from /metrics of a port or a base URL. */
export async function metricSum(target: number | string, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${baseOf(target)}/metrics`)).text();
  let sum = 0;
  for (const match of text.matchAll(new RegExp(`^${name}(\\{[^}]*\\})? (\\S+)$`, 'gm'))) {
    if (!labels || (match[1] ?? '').includes(labels)) sum += Number(match[2]);
  }
  return sum;
}

export interface Receiver {
  url: string;
  /** Distinct visits announced by `visit.new` (their visit ids). */
  visits: Set<string>;
  /** Deliveries received, repeats included (at-least-once: a receiver deduplicates on X-Svc-Delivery). */
  deliveries: () => number;
  /** Deliveries whose X-Svc-Delivery had been received before. */
  repeats: () => number;
  close(): Promise<void>;
}

/** A webhook receiver on loopback answering 204 to every delivery, counting `visit.new` by visit id. */
export async function startReceiver(): Promise<Receiver> {
  const visits = new Set<string>();
  const seen = new Set<string>();
  let deliveries = 0;
  let repeats = 0;
  const server: Server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      deliveries++;
      const id = String(req.headers['x-svc-delivery'] ?? '');
      if (seen.has(id)) repeats++;
      seen.add(id);
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString()) as { event?: string; data?: { visit_id?: string } };
        if (body.event === 'visit.new' && body.data?.visit_id) visits.add(body.data.visit_id);
      } catch {
        // Not JSON: counted as a delivery, announces no visit.
      }
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/hook`,
    visits,
    deliveries: () => deliveries,
    repeats: () => repeats,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** One row of the table of faults in docs/operations.md, printed for the run's log (`FAULT_ROW {…}`). */
export function faultRow(row: Record<string, unknown>): void {
  process.stdout.write(`FAULT_ROW ${JSON.stringify(row)}\n`);
}
