// Fault injection in the distributed pipeline, N in = N out (issue 24). The services run only: a
// private PostgreSQL, Redis (with its append-only file, as production runs it under BullMQ) and
// Kafka broker, started by scripts/services-up.sh for this file alone, so that stopping one never
// disturbs the other test files. Two processes of the platform, driven over HTTP as in production:
//   edge: SERVICE_ROLES=ingest (redirects), its own DATA_DIR;
//   core: SERVICE_ROLES=api,enricher,worker (chDB under its DATA_DIR), a webhook on `visit.new`.
// Each test sends redirects while a fault happens, then asserts the exact stored count (the visit
// rows and the rollups), no duplicates, and the `visit.new` webhooks received, and prints a
// `FAULT_ROW {…}` line: the table of faults in docs/operations.md comes from these runs.
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '#shared/paths.js';
import { SERVICES_MODE } from './support/context.js';
import { waitFor } from './support/wait.js';
import {
  ADMIN,
  client,
  exitedOutput,
  faultRow,
  freePort,
  health,
  killAll,
  load,
  metricSum,
  seed,
  settledCounts,
  startProcess,
  storedCounts,
  startReceiver,
  waitHealthy,
  type Receiver,
  type Seeded,
  type Started,
} from './support/platform-process.js';

const run = promisify(execFile);

/** The redirects' pace: enough to keep batches in hand at every moment, few enough that every webhook arrives within the test. */
const RATE = 1_000;
const CONNECTIONS = 8;

const dirs: string[] = [];
const tempDir = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
};

/** This file's own services: their folder, ports and the environment services-up.sh wrote. */
let services: { env: Record<string, string>; script: Record<string, string> };

/** Runs scripts/services-up.sh (starts whatever of the three is not running) or services-down.sh --only <name>. */
async function servicesScript(script: 'services-up.sh' | 'services-down.sh', ...args: string[]): Promise<void> {
  await run('bash', [join(PROJECT_ROOT, 'scripts', script), ...args], { env: { ...process.env, ...services.script }, timeout: 120_000 });
}
const stopService = (name: 'kafka' | 'redis' | 'postgres') => servicesScript('services-down.sh', '--only', name);
const startServices = () => servicesScript('services-up.sh');

beforeAll(async () => {
  if (!SERVICES_MODE) return;
  const [pg, redis, kafka, controller] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const dir = tempDir('linktrack-faults-services-');
  // PostgreSQL runs as its own OS user when the tests run as root: it must reach its folder inside.
  chmodSync(dir, 0o755);
  // The jars the suite's own services fetched (CI: .services-ci; a developer: .services), when there.
  const mainServices = process.env.SERVICES_DIR ?? join(PROJECT_ROOT, '.services');
  services = {
    env: {},
    script: {
      SERVICES_DIR: dir,
      PG_PORT: String(pg),
      REDIS_PORT: String(redis),
      KAFKA_PORT: String(kafka),
      KAFKA_CONTROLLER_PORT: String(controller),
      KAFKA_LIBS: join(mainServices, 'kafka', 'libs'),
      REDIS_APPENDONLY: 'yes',
      KAFKA_HEAP_OPTS: '-Xmx384m -Xms128m',
    },
  };
  await startServices();
  for (const line of readFileSync(join(dir, 'env'), 'utf8').split('\n')) {
    const match = /^export (\w+)=(.*)$/.exec(line);
    if (match) services.env[match[1]!] = match[2]!;
  }
}, 240_000);

afterEach(async ({ task }) => {
  if (task.result?.state === 'fail') {
    const said = exitedOutput();
    if (said) process.stdout.write(`${said}\n`);
  }
  killAll();
  // A test that failed during its fault leaves its service down: the next one starts with all three.
  if (SERVICES_MODE && services) await startServices();
});
afterAll(async () => {
  if (SERVICES_MODE && services) await servicesScript('services-down.sh', '--purge').catch(() => undefined);
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

interface Pair {
  edge: Started;
  edgeEnv: Record<string, string>;
  core: Started;
  coreEnv: Record<string, string>;
  seeded: Seeded;
  receiver: Receiver;
  path: string;
}

let pairs = 0;

/**
 * Starts the edge and the core on this file's services (topics and queues of their own), seeds an
 * owner with a link and (unless `webhook` is false: a long outage at 2 000 redirects/s makes more
 * deliveries than the test can wait for) a webhook.
 */
async function startPair(edgeOverrides: Record<string, string> = {}, { webhook = true } = {}): Promise<Pair> {
  pairs++;
  const receiver = await startReceiver();
  const common = {
    ...services.env,
    CLICKHOUSE_URL: '',
    SECRETS_KEY_PREVIOUS: '',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
    KAFKA_TOPIC_PREFIX: `faults${pairs}-${process.pid}.`,
    REDIS_PREFIX: `faults${pairs}-${process.pid}`,
    // One load client is one visitor sending thousands of visits: counted, not judged a burst.
    RATE_LIMIT_REDIRECT: '100000000:60',
    RATE_LIMIT_API: '100000:60',
    BURST_MAX_VISITS: '100000',
    WEBHOOK_ALLOWLIST: '127.0.0.1',
    WEBHOOK_RETRY_BASE_MS: '500',
    ENRICHER_BATCH_WAIT_MS: '20',
  };
  const coreEnv = { ...common, SERVICE_ROLES: 'api,enricher,worker', DATA_DIR: tempDir('linktrack-faults-core-'), PORT: String(await freePort()) };
  const core = startProcess(coreEnv);
  await waitHealthy(core);
  const seeded = await seed(core.port, webhook ? { webhookUrl: receiver.url } : {});
  // The edge starts after the link exists: its cache is warmed with it (the link stays cached when Postgres goes).
  const edgeEnv = {
    ...common,
    SERVICE_ROLES: 'ingest',
    DATA_DIR: tempDir('linktrack-faults-edge-'),
    PORT: String(await freePort()),
    ...edgeOverrides,
  };
  const edge = startProcess(edgeEnv);
  await waitHealthy(edge);
  return { edge, edgeEnv, core, coreEnv, seeded, receiver, path: `/${seeded.slug}` };
}

/**
 * Waits until every visit of the link is stored and announced, and checks N in = N out; the figures
 * of the row. `unanswered`: visits the edge may have taken without its answer arriving (requests in
 * flight when it was killed), stored or not; `window`: answered visits a kill may lose (the
 * documented window). `webhooks` false: the pair has no webhook.
 */
async function expectEveryVisitOnce(pair: Pair, core: Started, sent: number, { lost = 0, unanswered = 0, window = 0, webhooks = true } = {}) {
  const stored = await settledCounts(core.port, pair.seeded.token, pair.seeded.linkId, sent - lost - window, 120_000).catch(async (error: unknown) => {
    // What was stored when the wait gave up: the first figure to look at.
    const now = await storedCounts(core.port, pair.seeded.token, pair.seeded.linkId).catch(() => undefined);
    process.stdout.write(`N_IN_N_OUT ${JSON.stringify({ sent, lost, stored: now })}\n`);
    throw error;
  });
  const announced = () => (webhooks ? pair.receiver.visits.size : stored.rows);
  await waitFor(() => announced() >= stored.rows, 120_000, {
    intervalMs: 200,
    message: `visit.new for ${stored.rows} visits (got ${pair.receiver.visits.size})`,
  });
  await sleep(1_000);
  const expectedRows = stored.rows >= sent - lost - window && stored.rows <= sent - lost + unanswered ? stored.rows : sent - lost;
  if (stored.rows !== expectedRows || stored.rollups !== stored.rows || announced() !== stored.rows) {
    // What the core said about redeliveries and failures: the first place to look when N in ≠ N out.
    const said = core
      .output()
      .split('\n')
      .filter((line) => /redelivered|already stored|"level":50/.test(line));
    process.stdout.write(`N_IN_N_OUT ${JSON.stringify({ sent, lost, stored, webhooks: pair.receiver.visits.size, core: said.slice(-20) })}\n`);
  }
  expect(stored.rows).toBe(expectedRows);
  expect(stored.rollups).toBe(stored.rows);
  expect(announced()).toBe(stored.rows);
  return {
    sent,
    stored: stored.rows,
    rollups: stored.rollups,
    duplicates: stored.rollups - stored.rows,
    lost: Math.max(0, sent - stored.rows),
    ...(unanswered > 0 ? { taken_unanswered_stored: stored.rows - (sent - lost) } : {}),
    ...(webhooks ? { webhooks_visit_new: pair.receiver.visits.size, webhook_repeats: pair.receiver.repeats() } : {}),
  };
}

const bearer = (seeded: Seeded) => ({ authorization: `Bearer ${seeded.token}` });

describe.runIf(SERVICES_MODE)('faults in the distributed pipeline (private PostgreSQL, Redis and Kafka): every visit answered is stored once', () => {
  it('the enricher process killed with SIGKILL mid-batch and restarted', async () => {
    const pair = await startPair();
    const traffic = load(pair.edge.port, pair.seeded.host, pair.path, { connections: CONNECTIONS, ratePerSec: RATE, stopOnError: false });
    // Batches are in hand at every moment of a steady load: the kill lands inside one.
    await waitFor(async () => (await metricSum(pair.core.port, 'visits_inserted_total')) > 500, 30_000, { message: 'the enricher storing visits' });
    await sleep(300);
    pair.core.child.kill('SIGKILL');
    await pair.core.exited;
    const killed = Date.now();
    await sleep(1_000);
    const core = startProcess(pair.coreEnv);
    const spawned = Date.now();
    // The first batch the restarted enricher handled: visits stored, or found stored already (the
    // killed process's uncommitted batch comes first). Polled from the spawn on: a batch handled
    // before the HTTP server listens shows at its first answer, so the figure is an upper bound.
    const handled = async () => {
      try {
        return (await metricSum(core.port, 'visits_inserted_total')) + (await metricSum(core.port, 'visits_deduplicated_total')) > 0;
      } catch {
        return false;
      }
    };
    await waitFor(handled, 90_000, { intervalMs: 100, message: 'the restarted enricher handling a batch' });
    const resumed = Date.now();
    await waitHealthy(core);
    const restartedMs = Date.now() - killed;
    // Where the restarted process began its own work (its 'listening' line: its time less startup_ms),
    // after node loaded its modules (from source through tsx here: seconds on a loaded machine).
    const listening = core
      .output()
      .split('\n')
      .filter((line) => line.includes('"msg":"listening"'))
      .map((line) => JSON.parse(line) as { time: string; startup_ms: number })[0]!;
    const began = Date.parse(listening.time) - listening.startup_ms;
    await sleep(1_000);
    await traffic.stop();
    expect(Object.fromEntries(traffic.refused)).toEqual({});
    const row = await expectEveryVisitOnce(pair, core, traffic.answered.length);
    const deduplicated = await metricSum(core.port, 'visits_deduplicated_total');
    faultRow({
      fault: 'enricher (core process) SIGKILL mid-batch, restarted',
      ...row,
      redelivered_already_stored: deduplicated,
      recover_ms: Date.now() - killed,
      restart_ms: restartedMs,
      resumed_after_kill_ms: resumed - killed,
      resumed_after_spawn_ms: resumed - spawned,
      resumed_after_start_ms: resumed - began,
    });
    // The restarted process joins its groups while it starts: it gets the dead member's partitions
    // once Kafka's session timeout (6 s from the kill) has passed, not 30 s.
    expect(resumed - began).toBeLessThanOrEqual(10_000);
    await pair.receiver.close();
  }, 300_000);

  it('Kafka down for 60 s at 2 000 redirects/s: the edge answers every redirect, keeps the visits on its spool, forwards them all after: 0 lost, 0 duplicated, 0 dropped', async () => {
    const pair = await startPair({}, { webhook: false });
    const started = performance.now();
    // 64 connections: the load is paced, and each connection waits for its answer (tens of ms on a loaded machine).
    const traffic = load(pair.edge.port, pair.seeded.host, pair.path, { connections: 64, ratePerSec: 2_000, stopOnError: false });
    await sleep(1_500);
    await stopService('kafka');
    const stopped = Date.now();
    // While it lasts: the edge answers and says it is degraded, with what its spool holds and how old; the core's enricher cannot work: 503.
    await waitFor(async () => (await metricSum(pair.edge.port, 'visit_spool_messages', 'topic="visits.raw"')) > 2_000, 30_000, {
      message: 'visits spooled at the edge',
    });
    const spooling = await waitFor(
      async () => {
        const answer = await health(pair.edge.port);
        return answer?.json.data.degraded.some((entry: { component: string }) => entry.component === 'spool visits.raw') ? answer : undefined;
      },
      30_000,
      { message: 'the edge degraded with its spool' },
    );
    expect(spooling.status).toBe(200);
    expect(spooling.json.data.status).toBe('degraded');
    const spooled = spooling.json.data.spool.find((entry: { topic: string }) => entry.topic === 'visits.raw');
    expect(spooled.messages).toBeGreaterThan(2_000);
    expect(spooled.oldest_age_s).toBeGreaterThan(1);
    expect(spooled.last_error).not.toBeNull();
    const coreHealth = await health(pair.core.port);
    expect(coreHealth?.status).toBe(503);
    expect(coreHealth?.json.error.details.down).toContain('visit_log');
    await sleep(Math.max(0, stopped + 60_000 - Date.now()));
    const peak = await metricSum(pair.edge.port, 'visit_spool_messages', 'topic="visits.raw"');
    await startServices();
    const restarted = Date.now();
    await waitFor(async () => (await metricSum(pair.edge.port, 'visit_spool_messages', 'topic="visits.raw"')) < 2_000, 120_000, {
      intervalMs: 500,
      message: 'the edge spool forwarded',
    });
    const forwarded = Date.now() - restarted;
    await sleep(1_000);
    await traffic.stop();
    const seconds = (performance.now() - started) / 1000;
    expect(Object.fromEntries(traffic.refused)).toEqual({});
    expect(await metricSum(pair.edge.port, 'visits_dropped_total')).toBe(0);
    const row = await expectEveryVisitOnce(pair, pair.core, traffic.answered.length, { webhooks: false });
    await waitHealthy(pair.edge);
    faultRow({
      fault: 'Kafka broker down 60 s at 2 000 redirects/s',
      ...row,
      redirects_per_s: Math.round(traffic.answered.length / seconds),
      spool_peak: peak,
      dropped: 0,
      outage_ms: restarted - stopped,
      spool_forwarded_ms: forwarded,
      recover_ms: Date.now() - restarted,
    });
    await pair.receiver.close();
  }, 420_000);

  it('Kafka down past the edge spool budget (VISIT_SPOOL_MAX_BYTES): redirects still answered, what does not fit counted in visits_dropped_total, the rest stored once', async () => {
    const pair = await startPair({ VISIT_SPOOL_MAX_BYTES: '262144' });
    const traffic = load(pair.edge.port, pair.seeded.host, pair.path, { connections: CONNECTIONS, ratePerSec: RATE, stopOnError: false });
    await sleep(1_500);
    await stopService('kafka');
    const stopped = Date.now();
    await waitFor(async () => (await metricSum(pair.edge.port, 'visits_dropped_total', 'reason="spool_full"')) > 500, 30_000, {
      message: 'the edge spool full',
    });
    await startServices();
    const restarted = Date.now();
    await waitFor(async () => (await metricSum(pair.edge.port, 'visit_spool_messages', 'topic="visits.raw"')) < 200, 60_000, {
      message: 'the edge spool forwarded',
    });
    await sleep(1_000);
    await traffic.stop();
    expect(Object.fromEntries(traffic.refused)).toEqual({});
    const dropped = await metricSum(pair.edge.port, 'visits_dropped_total', 'reason="spool_full"');
    expect(dropped).toBeGreaterThan(0);
    expect(await metricSum(pair.edge.port, 'visits_dropped_total')).toBe(dropped);
    // Exactly the visits counted as dropped are missing: nothing else is lost, nothing is stored twice.
    const row = await expectEveryVisitOnce(pair, pair.core, traffic.answered.length, { lost: dropped });
    faultRow({
      fault: 'Kafka down past the edge spool budget (VISIT_SPOOL_MAX_BYTES=262144)',
      ...row,
      dropped_counted: dropped,
      outage_ms: restarted - stopped,
      recover_ms: Date.now() - restarted,
    });
    await pair.receiver.close();
  }, 300_000);

  it('the ingest node killed with SIGKILL under load and restarted: every answered visit stored once but those of the event-loop iteration the kill cut (its journal and spool survive the kill)', async () => {
    const pair = await startPair();
    const traffic = load(pair.edge.port, pair.seeded.host, pair.path, { connections: CONNECTIONS, ratePerSec: RATE, stopOnError: false });
    await waitFor(async () => (await metricSum(pair.core.port, 'visits_inserted_total')) > 500, 30_000, { message: 'the enricher storing visits' });
    await sleep(300);
    pair.edge.child.kill('SIGKILL');
    await pair.edge.exited;
    const killed = Date.now();
    await sleep(1_000);
    const edge = startProcess(pair.edgeEnv);
    await waitHealthy(edge);
    const restartedMs = Date.now() - killed;
    await sleep(2_000);
    await traffic.stop();
    // Requests sent while the node was down got no answer (counted as errors): their visits are not owed.
    const refused = Object.fromEntries(traffic.refused);
    expect(Object.keys(refused).filter((key) => key !== 'error')).toEqual([]);
    // The documented window (docs/operations.md, Durability): the visits answered in the event-loop
    // iteration the kill interrupted, before its journal write — at most one request per connection.
    // A request the node took (and journaled) but whose answer the kill cut off may be stored too.
    const row = await expectEveryVisitOnce(pair, pair.core, traffic.answered.length, { unanswered: CONNECTIONS, window: CONNECTIONS }).catch(
      (error: unknown) => {
        process.stdout.write(`RESTARTED EDGE:\n${edge.output().split('\n').slice(-40).join('\n')}\n`);
        throw error;
      },
    );
    faultRow({
      fault: 'ingest node SIGKILL under load, restarted',
      ...row,
      unanswered_requests: refused.error ?? 0,
      redelivered_already_stored: await metricSum(pair.core.port, 'visits_deduplicated_total'),
      restart_ms: restartedMs,
      recover_ms: Date.now() - killed,
    });
    await pair.receiver.close();
  }, 300_000);

  it('Redis down: redirects and the API keep answering (rate limits fail open), webhooks wait, nothing is lost', async () => {
    const pair = await startPair();
    const traffic = load(pair.edge.port, pair.seeded.host, pair.path, { connections: CONNECTIONS, ratePerSec: RATE, stopOnError: false });
    await sleep(1_500);
    await stopService('redis');
    const stopped = Date.now();
    const call = client(pair.core.port);
    // The API answers while Redis is down: reads and a write.
    const listed = await call('GET', `/api/v1/links?subdomain=${pair.seeded.subdomain}`, undefined, bearer(pair.seeded));
    expect(listed.status).toBe(200);
    const made = await call(
      'POST',
      '/api/v1/links',
      { subdomain: pair.seeded.subdomain, target_url: 'https://example.com/during-redis', slug: 'during-redis' },
      bearer(pair.seeded),
    );
    expect(made.status).toBe(201);
    const edgeHealth = await health(pair.edge.port);
    expect(edgeHealth?.status).toBe(200);
    expect(edgeHealth?.json.data.degraded.map((entry: { component: string }) => entry.component)).toContain('cache');
    // The core's worker keeps its jobs on Redis: it cannot work, and says so.
    const coreHealth = await health(pair.core.port);
    expect(coreHealth?.status).toBe(503);
    expect(coreHealth?.json.error.details.down).toEqual(expect.arrayContaining(['jobs', 'cache']));
    await sleep(3_000);
    await startServices();
    const restarted = Date.now();
    await sleep(1_500);
    await traffic.stop();
    expect(Object.fromEntries(traffic.refused)).toEqual({});
    const row = await expectEveryVisitOnce(pair, pair.core, traffic.answered.length);
    await waitHealthy(pair.core);
    faultRow({ fault: 'Redis stopped and restarted under load', ...row, outage_ms: restarted - stopped, recover_ms: Date.now() - restarted });
    await pair.receiver.close();
  }, 300_000);

  it('Postgres down: cached links keep redirecting, the API answers 503 service_unavailable, nothing is half-written, nothing is lost', async () => {
    const pair = await startPair();
    const traffic = load(pair.edge.port, pair.seeded.host, pair.path, { connections: CONNECTIONS, ratePerSec: RATE, stopOnError: false });
    await sleep(1_500);
    await stopService('postgres');
    const stopped = Date.now();
    const call = client(pair.core.port);
    const listed = await call('GET', `/api/v1/links?subdomain=${pair.seeded.subdomain}`, undefined, bearer(pair.seeded));
    expect(listed.status).toBe(503);
    expect(listed.json.error.code).toBe('service_unavailable');
    expect(listed.json.error.message).toContain('database');
    expect(listed.json.error.details.down).toEqual(['database']);
    const made = await call(
      'POST',
      '/api/v1/links',
      { subdomain: pair.seeded.subdomain, target_url: 'https://example.com/during-pg', slug: 'during-pg' },
      bearer(pair.seeded),
    );
    expect(made.status).toBe(503);
    const coreHealth = await health(pair.core.port);
    expect(coreHealth?.status).toBe(503);
    expect(coreHealth?.json.error.details.down).toContain('database');
    const edgeHealth = await health(pair.edge.port);
    expect(edgeHealth?.status).toBe(200);
    expect(edgeHealth?.json.data.status).toBe('degraded');
    await sleep(3_000);
    await startServices();
    const restarted = Date.now();
    await waitFor(async () => (await call('GET', `/api/v1/links?subdomain=${pair.seeded.subdomain}`, undefined, bearer(pair.seeded))).status === 200, 60_000, {
      message: 'the API answering again',
    });
    // Nothing half-written: the link refused during the outage does not exist, and can be made now.
    const after = await call('GET', `/api/v1/links?subdomain=${pair.seeded.subdomain}`, undefined, bearer(pair.seeded));
    expect(after.json.data.links.map((link: { slug: string }) => link.slug)).toEqual(['load']);
    const again = await call(
      'POST',
      '/api/v1/links',
      { subdomain: pair.seeded.subdomain, target_url: 'https://example.com/during-pg', slug: 'during-pg' },
      bearer(pair.seeded),
    );
    expect(again.status).toBe(201);
    await sleep(1_000);
    await traffic.stop();
    expect(Object.fromEntries(traffic.refused)).toEqual({});
    const row = await expectEveryVisitOnce(pair, pair.core, traffic.answered.length);
    // Every attempt is a row of the delivery log once the database is back (those made during the
    // outage written late), and almost nothing was sent twice: at most 1 % of the deliveries.
    const hooks = await call('GET', '/api/v1/webhooks', undefined, bearer(pair.seeded));
    const hookId = hooks.json.data.webhooks[0].id as string;
    const recorded = async () => (await call('GET', `/api/v1/webhooks/${hookId}/deliveries?limit=1`, undefined, bearer(pair.seeded))).json.meta.total as number;
    // Not met in time, the row is still printed: the figures are what tells what went wrong.
    await waitFor(async () => (await recorded()) >= pair.receiver.deliveries(), 60_000, { intervalMs: 500 }).catch(() => undefined);
    const deliveries = pair.receiver.deliveries();
    const repeats = pair.receiver.repeats();
    const attemptsRecorded = await recorded();
    faultRow({
      fault: 'PostgreSQL stopped and restarted under load',
      ...row,
      webhook_deliveries: deliveries,
      webhook_repeats: repeats,
      webhook_repeats_pct: Math.round((repeats / deliveries) * 10_000) / 100,
      webhook_attempts_recorded: attemptsRecorded,
      outage_ms: restarted - stopped,
      recover_ms: Date.now() - restarted,
    });
    expect(attemptsRecorded).toBe(deliveries);
    expect(repeats).toBeLessThanOrEqual(deliveries * 0.01);
    await pair.receiver.close();
  }, 300_000);
});
