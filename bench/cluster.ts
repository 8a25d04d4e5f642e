// The production path as separate processes on real Postgres, Redis and Kafka, loaded from outside,
// beside the one-process platform measured in the same run: what a stored visit costs per process
// kind, and whether every answered visit is stored exactly once.
//   bash bench/run.sh cluster [seconds] [connections] [rate]
//
// Services: with DATABASE_URL, REDIS_URL and KAFKA_BROKERS in the environment (`source
// .services/env`) it uses those; otherwise it runs scripts/services-up.sh (SERVICES_DIR and the
// *_PORT settings as that script reads them) and, at the end, stops what that started. The broker's
// own CPU is read from its pid under SERVICES_DIR (default .services), its topics described with
// the kafka-topics.sh written there.
//
// 1. The one-process figure: bench/platform.ts's measurement (embedded stores, the same load).
//    CLUSTER_ONLY=1 leaves it out (and the ratio with it).
// 2. The cluster, from the compiled code (dist-bench), each process with its own DATA_DIR and port:
//    one core process (SERVICE_ROLES=api,enricher,worker; chDB inside it) and 3 ingest nodes
//    (SERVICE_ROLES=ingest), on a database, Kafka topic prefix and Redis prefix new to this run (the
//    platform creates the topics; the bench checks they have ≥ 4 partitions). An owner, a subdomain
//    and two links are seeded through the core's API; a warm-up as fast as answered, 3 s per ingest
//    node (as the one process's 3 s: each node then has answered about as many); then `seconds` of redirects
//    from three autocannon processes, one per ingest node, `connections` and `rate` split between
//    them. CPU (user + system of every thread, from /proc) is counted from the load's start until
//    every answered visit is stored, per process and by thread kind; the answered visits are each
//    node's own count of its 302 answers (redirects_total), which includes the requests autocannon
//    had in flight when it stopped.
// 3. Delay: 10 s of a trickle (20 redirects/s per node) to the second link, whose visit list is read
//    every 50 ms: a visit's delay is from its time at the edge (`ts`) to the read that first lists it.
// 4. Exactly once: for each link, the visit list (one row per visit_id, FINAL) and the owner's
//    report (the rollups count each first-version row inserted: a visit inserted twice counts
//    twice) must both equal the visits the nodes answered. A difference exits 1.
// Every process's DATA_DIR (the one process's too) is under /dev/shm when that is a writable tmpfs
// with 2 GiB free; BENCH_DATA_ROOT names another folder (bench/lib/data-root.ts says why).
// PROFILE=1 adds --cpu-prof to every platform process (bench-profiles/, written when it stops).
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { serverDatabase } from '#tests/support/fresh-database.js';
import {
  BROWSER_UA,
  client,
  freePort,
  killAll,
  metricSum,
  seed,
  storedCounts,
  waitHealthy,
  type Seeded,
  type Started,
} from '#tests/support/platform-process.js';
import { cannon, loadPinned, otherLoad, pad, quantile, type Run } from './lib/load.js';
import {
  ENTRY,
  insertTotals,
  LOAD_ENV,
  measurePlatform,
  profileArgs,
  quietNote,
  startOnEveryCore,
  waitInserted,
  waitStored,
  type Figures,
} from './lib/platform-run.js';
import { benchDataRoot } from './lib/data-root.js';
import { cpuOf, memoryOf, threadKinds, threadsOf, threadsPer, waitQuiet, type ThreadKind } from './lib/proc.js';
import { brokerPid, checkPartitions, kafkaTopics, services, servicesDown, type Services } from './lib/services.js';

const seconds = Number(process.argv[2] ?? 20);
const connections = Number(process.argv[3] ?? 50);
/** Redirects per second offered in all (0: as many as the platform answers). */
const rate = Number(process.argv[4] ?? 0);
if (!Number.isInteger(seconds) || seconds < 1 || !Number.isInteger(connections) || connections < 3 || !Number.isInteger(rate) || rate < 0) {
  console.error('usage: bash bench/run.sh cluster [seconds ≥ 1] [connections ≥ 3] [redirects/s in all, 0: as fast as answered]');
  process.exit(1);
}
/** Ingest nodes (CLUSTER_INGEST_NODES, 3 by default): each its own process, on every core as the core process and the one process. */
const INGEST_NODES = Number(process.env.CLUSTER_INGEST_NODES ?? 3);
if (!Number.isInteger(INGEST_NODES) || INGEST_NODES < 1 || INGEST_NODES > 8) {
  console.error('CLUSTER_INGEST_NODES: 1 to 8');
  process.exit(1);
}
/** The issue's target: services CPU per stored visit (all platform processes, the broker apart) ≤ 1.2 × the one-process figure. */
const TARGET_RATIO = 1.2;
const TRICKLE = { seconds: 10, perNode: 20 };
/** The warm-up's seconds per ingest node (the one process's is 3 s: measurePlatform). */
const WARMUP_S_PER_NODE = 3;
/** The idle span measured before the load. */
const IDLE_MS = 5_000;
/** The whole run's bound: a hung phase ends it, and everything started is stopped. */
const BOUND_MS = (15 * 60 + 3 * seconds) * 1000;
/**
 * Where every DATA_DIR lives, the one process's and each cluster process's: a tmpfs by default
 * (bench/lib/data-root.ts says why: on this project's disk chDB's file creation costs what earlier
 * deletions left, so two processes measured one after the other on it pay differently).
 */
const DATA_ROOT = benchDataRoot();

// ---------------------------------------------------------------------------------------------
// The cluster
// ---------------------------------------------------------------------------------------------

interface Node {
  name: string;
  kind: 'ingest' | 'core';
  started: Started;
  dataDir: string;
}

/** What a process used over the measured span. */
interface Usage {
  name: string;
  kind: 'ingest' | 'core' | 'broker';
  /** CPU µs over the span, in all and by thread kind (undefined for the broker: a JVM's threads are not split). */
  cpuUs: number;
  kinds?: Record<ThreadKind, number>;
  /** What the process uses at idle (timers, heartbeats, fetch polls, background merges) over as long a span, µs. */
  idleUs: number;
  threads?: [string, number][];
  /** Redirects this ingest node answered in the span. */
  answered?: number;
  peakRssMb: number;
}

interface ClusterFigures {
  usage: Usage[];
  /** Redirects answered in the measured span (the nodes' counts), and the same as autocannon counted them. */
  answered: number;
  counted: number;
  rps: number;
  runs: Run[];
  drainS: number;
  /** The measured span: the load's start to every visit stored, ms. */
  spanMs: number;
  delay: { answered: number; p50: number; p95: number; p99: number; max: number };
  partitions: string;
  /** Kafka publish calls of the ingest nodes for visits.raw, and inserts into `visits` of the core, in the measured span. */
  publishes: number;
  inserts: number;
  exact: string[];
  failures: string[];
}

/** 302s a node has answered so far (its own counter: every one handed a visit to its producer). */
const redirectsOf = (node: Node) => metricSum(node.started.port, 'redirects_total', 'status="302"');

/** The ingest nodes' publish calls to visits.raw (one publish-delay observation each) and the core's inserts into `visits`, so far. */
async function batches(core: Node, ingest: Node[]): Promise<{ publishes: number; inserts: number }> {
  const publishes = await Promise.all(ingest.map((node) => metricSum(node.started.port, 'visit_log_publish_delay_seconds_count', 'topic="visits.raw"')));
  return { publishes: publishes.reduce((sum, n) => sum + n, 0), inserts: (await insertTotals(core.started.port)).count };
}

/** Splits `total` into `parts` whole shares differing by at most one. */
const split = (total: number, parts: number) => Array.from({ length: parts }, (_, i) => Math.floor(total / parts) + (i < total % parts ? 1 : 0));

async function measureCluster(servicesEnv: Record<string, string>, servicesDir: string, nodes: Node[], dirs: string[]): Promise<ClusterFigures> {
  const runId = `cluster${Date.now()}`;
  const topicPrefix = `${runId}.`;
  const database = await serverDatabase(servicesEnv.DATABASE_URL!, 'bench_cluster');
  const common = {
    ...servicesEnv,
    ...LOAD_ENV,
    DATABASE_URL: database.url,
    CLICKHOUSE_URL: '',
    SECRETS_KEY: servicesEnv.SECRETS_KEY || Buffer.alloc(32, 7).toString('base64'),
    SECRETS_KEY_PREVIOUS: '',
    KAFKA_TOPIC_PREFIX: topicPrefix,
    REDIS_PREFIX: runId,
  };
  const start = async (name: string, kind: Node['kind'], roles: string): Promise<Node> => {
    const dataDir = mkdtempSync(join(DATA_ROOT.dir, `linktrack-bench-${name}-`));
    dirs.push(dataDir);
    // Placed as the one process is (measurePlatform), although this process has pinned itself to core 0 (the header line's loadPinned).
    const started = startOnEveryCore({ ...common, SERVICE_ROLES: roles, DATA_DIR: dataDir, PORT: String(await freePort()) }, [...profileArgs(), ENTRY]);
    const node = { name, kind, started, dataDir };
    nodes.push(node);
    return node;
  };
  try {
    // The core first: it migrates the new database; the links exist before the ingest nodes start (they warm their cache with them).
    const core = await start('core', 'core', 'api,enricher,worker');
    await waitHealthy(core.started, { timeoutMs: 180_000 });
    const seeded = await seed(core.started.port);
    const delayLink = await client(core.started.port)(
      'POST',
      '/api/v1/links',
      { subdomain: seeded.subdomain, target_url: 'https://example.com/landing', slug: 'delay' },
      { authorization: `Bearer ${seeded.token}` },
    );
    if (delayLink.status !== 201) throw new Error(`link: ${delayLink.status} ${JSON.stringify(delayLink.json)}`);
    const delaySeeded = { ...seeded, linkId: delayLink.json.data.id as string, slug: 'delay' };
    const ingest: Node[] = [];
    for (let i = 1; i <= INGEST_NODES; i++) ingest.push(await start(`ingest-${i}`, 'ingest', 'ingest'));
    await Promise.all(ingest.map((node) => waitHealthy(node.started, { timeoutMs: 180_000 })));
    const broker = brokerPid(servicesDir);

    const headers = { host: seeded.host, 'user-agent': BROWSER_UA };
    const loadAll = (slug: string, durationSec: number, shares: number[], rates: number[]) =>
      Promise.all(
        ingest.map((node, i) =>
          cannon(`http://127.0.0.1:${node.started.port}/${slug}`, {
            durationSec,
            connections: shares[i]!,
            headers,
            expectStatus: 302,
            ...(rates[i]! > 0 ? { rate: rates[i]! } : {}),
          }),
        ),
      );
    const answeredSoFar = async () => (await Promise.all(ingest.map(redirectsOf))).reduce((sum, n) => sum + n, 0);
    const shares = split(connections, INGEST_NODES);
    const rates = split(rate, INGEST_NODES);

    // Warm-up: the JIT, the caches, the consumer group's assignment; every warm-up visit stored
    // before the measured load. As the one process's (bench/lib/platform-run.ts): as fast as
    // answered, whatever the rate; and 3 s for each ingest node, so that each node has answered
    // about as many requests as the one process had before its span (V8 optimises a function after
    // enough calls: a node taking a third of the load warms up three times slower).
    await loadAll(
      seeded.slug,
      WARMUP_S_PER_NODE * INGEST_NODES,
      shares,
      shares.map(() => 0),
    );
    await waitStored(core.started.port, seeded, await answeredSoFar(), 180_000);
    const partitions = checkPartitions(servicesDir, topicPrefix);

    const processes = nodes.map((node) => ({ node, pid: node.started.child.pid! }));
    // The idle span and the load start once the warm-up's merges are done, as the one process's do.
    console.log(`cluster: ${quietNote(await waitQuiet(processes.map(({ pid }) => pid)))}`);
    // Idle: what each process uses with no traffic, CPU µs per ms, to tell the per-visit cost from the fixed one.
    const idleFrom = performance.now();
    const idleBefore = [...processes.map(({ pid }) => cpuOf(pid)), broker ? cpuOf(broker) : 0];
    await sleep(IDLE_MS);
    const idleSpan = performance.now() - idleFrom;
    const idleRate = [...processes.map(({ pid }) => cpuOf(pid)), broker ? cpuOf(broker) : 0].map((us, i) => (us - idleBefore[i]!) / idleSpan);
    const cpuBefore = processes.map(({ pid }) => cpuOf(pid));
    const threadsBefore = processes.map(({ pid }) => threadsOf(pid));
    const brokerBefore = broker ? cpuOf(broker) : 0;
    const answeredBefore = await Promise.all(ingest.map(redirectsOf));
    const batchesBefore = await batches(core, ingest);
    const started = performance.now();
    const runs = await loadAll(seeded.slug, seconds, shares, rates);
    const loadEnded = performance.now();
    const answeredAfter = await Promise.all(ingest.map(redirectsOf));
    const totalAnswered = answeredAfter.reduce((sum, n) => sum + n, 0);
    // The core's enricher has inserted every visit the nodes answered, the warm-up's included (its metric: no ClickHouse read in the span).
    await waitInserted(core.started.port, totalAnswered, 300_000);
    const drainS = (performance.now() - loadEnded) / 1000;
    const batchesAfter = await batches(core, ingest);
    const span = performance.now() - started;
    const usage: Usage[] = processes.map(({ node, pid }, i) => {
      const threads = threadsPer(threadsBefore[i]!, threadsOf(pid), 1);
      const nodeIndex = ingest.indexOf(node);
      return {
        name: node.name,
        kind: node.kind,
        cpuUs: cpuOf(pid) - cpuBefore[i]!,
        kinds: threadKinds(threads),
        threads,
        idleUs: idleRate[i]! * span,
        ...(nodeIndex >= 0 ? { answered: answeredAfter[nodeIndex]! - answeredBefore[nodeIndex]! } : {}),
        peakRssMb: 0,
      };
    });
    if (broker) usage.push({ name: 'Kafka broker', kind: 'broker', cpuUs: cpuOf(broker) - brokerBefore, idleUs: idleRate.at(-1)! * span, peakRssMb: 0 });
    const answered = usage.reduce((sum, u) => sum + (u.answered ?? 0), 0);
    const counted = runs.reduce((sum, run) => sum + run.total, 0);

    // Delay: a trickle to the second link, its visit list read every 50 ms.
    const delay = await trickle(core, ingest, delaySeeded, headers, answeredSoFar);

    // Exactly once, each link: the list (distinct visit_id) and the rollups (every first-version row) both = answered.
    const exact: string[] = [];
    const failures: string[] = [];
    for (const [label, link, expected] of [
      ['load', seeded, totalAnswered],
      ['trickle', delaySeeded, delay.answered],
    ] as const) {
      const stored = await storedCounts(core.started.port, seeded.token, link.linkId);
      const line = `${label} link: ${expected} visits answered, ${stored.rows} distinct visits stored, ${stored.rollups} visit rows counted by the rollups`;
      exact.push(line);
      if (stored.rows !== expected || stored.rollups !== expected) failures.push(line);
    }
    // Peak RSS is the kernel's high-water mark over each process's life: read before they stop.
    for (const u of usage) u.peakRssMb = memoryOf(u.kind === 'broker' ? broker! : nodes.find((node) => node.name === u.name)!.started.child.pid!, 'VmHWM');
    return {
      usage,
      answered,
      counted,
      publishes: batchesAfter.publishes - batchesBefore.publishes,
      inserts: batchesAfter.inserts - batchesBefore.inserts,
      rps: counted / ((loadEnded - started) / 1000),
      runs,
      drainS,
      spanMs: span,
      delay,
      partitions,
      exact,
      failures,
    };
  } catch (error) {
    const tails = nodes.map((node) => `--- ${node.name}:\n${node.started.output().split('\n').slice(-20).join('\n')}`).join('\n');
    throw new Error(`cluster: ${(error as Error).message}\n${tails}`, { cause: error });
  } finally {
    await stopAll(nodes);
    await database.drop().catch((error: unknown) => console.error(`the bench's database was not dropped: ${(error as Error).message}`));
    try {
      kafkaTopics(servicesDir, ['--delete', '--topic', `${topicPrefix.replace(/\./g, '\\.')}.*`]);
    } catch (error) {
      console.error(`the run's topics were not deleted: ${(error as Error).message}`);
    }
  }
}

/**
 * A steady trickle through every ingest node to a link of its own, its visit list read every 50 ms
 * meanwhile and until it lists every visit the nodes answered: each visit's delay from its time at
 * the edge (`ts`) to the first read that lists it, and how many visits the trickle was.
 */
async function trickle(core: Node, ingest: Node[], link: Seeded, headers: Record<string, string>, answeredSoFar: () => Promise<number>) {
  const call = client(core.started.port);
  const auth = { authorization: `Bearer ${link.token}` };
  const firstSeen = new Map<string, number>();
  // The newest page, and older pages while the list holds visits not seen yet (one stored late, behind 200 newer).
  const read = async () => {
    for (let cursor = ''; ;) {
      const page = await call('GET', `/api/v1/visits?link_id=${link.linkId}&limit=200${cursor && `&cursor=${cursor}`}`, undefined, auth);
      if (page.status !== 200) throw new Error(`visit list: ${page.status} ${JSON.stringify(page.json)}`);
      const now = Date.now();
      for (const visit of page.json.data.visits as { visit_id: string; ts: string }[])
        if (!firstSeen.has(visit.visit_id)) firstSeen.set(visit.visit_id, now - Date.parse(visit.ts));
      cursor = page.json.meta.next_cursor ?? '';
      if (!cursor || firstSeen.size >= page.json.meta.total) return;
    }
  };
  const before = await answeredSoFar();
  let sending = true;
  const sent = Promise.all(
    ingest.map((node) =>
      cannon(`http://127.0.0.1:${node.started.port}/${link.slug}`, {
        durationSec: TRICKLE.seconds,
        connections: 1,
        headers,
        expectStatus: 302,
        rate: TRICKLE.perNode,
      }),
    ),
  ).finally(() => (sending = false));
  while (sending) {
    await read();
    await sleep(50);
  }
  await sent;
  const answered = (await answeredSoFar()) - before;
  const deadline = performance.now() + 120_000;
  while (firstSeen.size < answered) {
    if (performance.now() > deadline) throw new Error(`trickle: ${firstSeen.size} of ${answered} visits listed after 120 s`);
    await sleep(50);
    await read();
  }
  const delays = [...firstSeen.values()].sort((a, b) => a - b);
  return { answered, p50: quantile(delays, 0.5), p95: quantile(delays, 0.95), p99: quantile(delays, 0.99), max: delays.at(-1)! };
}

/** SIGTERM to the ingest nodes (they hand what they hold to Kafka), then to the core; SIGKILL to what has not exited 30 s later. */
async function stopAll(nodes: Node[]): Promise<void> {
  for (const kind of ['ingest', 'core'] as const) {
    const these = nodes.filter((node) => node.kind === kind && node.started.child.exitCode === null && node.started.child.signalCode === null);
    for (const node of these) node.started.child.kill('SIGTERM');
    await Promise.race([Promise.all(these.map((node) => node.started.exited)), sleep(30_000)]);
  }
  killAll();
}

/** Prints the figures, per process and per kind, beside the one-process run; false when a visit was not stored exactly once. */
function report(c: ClusterFigures, one: Figures | undefined): boolean {
  const stored = c.answered;
  const platform = c.usage.filter((u) => u.kind !== 'broker');
  const ingest = platform.filter((u) => u.kind === 'ingest');
  const core = platform.filter((u) => u.kind === 'core');
  const broker = c.usage.find((u) => u.kind === 'broker');
  const sum = (us: Usage[], pick: (u: Usage) => number) => us.reduce((total, u) => total + pick(u), 0);
  const figure = (value: number | undefined) => (value === undefined ? '–' : value.toFixed(1));
  const row = (label: string, unit: string, us: Usage[], per: number) => {
    const kinds = us.some((u) => u.kinds) ? (['event loop', 'helpers', 'ClickHouse'] as const).map((kind) => sum(us, (u) => u.kinds?.[kind] ?? 0) / per) : [];
    const cpu = sum(us, (u) => u.cpuUs);
    const idle = sum(us, (u) => u.idleUs);
    console.log(
      `${label.padEnd(27)}${pad(unit, 9)}${pad(figure(cpu / per), 8)}${pad(figure((cpu - idle) / per), 11)}${pad(figure((100 * idle) / c.spanMs / 1000), 9)}` +
        `${[0, 1, 2].map((i) => pad(figure(kinds[i]), 12)).join('')}${pad(sum(us, (u) => u.peakRssMb).toFixed(0), 12)}`,
    );
  };
  console.log(
    `\nredirects: ${c.answered} answered by the nodes in the measured ${seconds} s (autocannon counted ${c.counted}), ${c.rps.toFixed(0)}/s; drain ${c.drainS.toFixed(1)} s`,
  );
  c.runs.forEach((run, i) => console.log(`  ingest-${i + 1}: ${run.total} redirects, ${run.rps.toFixed(0)}/s, p50 ${run.p50} ms, p99 ${run.p99} ms`));
  console.log(`Kafka topics (partitions): ${c.partitions}`);
  console.log(
    `batches: ${c.publishes} Kafka publish calls from the ingest nodes (${(stored / Math.max(1, c.publishes)).toFixed(1)} visits each), ${c.inserts} inserts into visits by the core (${(stored / Math.max(1, c.inserts)).toFixed(0)} rows each)`,
  );
  console.log(
    `\nCPU µs per redirect (ingest) or per stored visit, from the load's start until every visit is stored (${(c.spanMs / 1000).toFixed(1)} s, ${stored} visits);` +
      ` "above idle" takes off what each process used at idle over as long (measured for ${IDLE_MS / 1000} s before the load: "idle %" of a core); peak RSS of several processes is their sum`,
  );
  console.log(
    `${'process'.padEnd(27)}${pad('per', 9)}${pad('CPU µs', 8)}${pad('above idle', 11)}${pad('idle %', 9)}${pad('event loop', 12)}${pad('helpers', 12)}${pad('ClickHouse', 12)}${pad('peak RSS MB', 12)}`,
  );
  for (const u of ingest) row(u.name, 'redirect', [u], u.answered!);
  row(`ingest ×${ingest.length}`, 'redirect', ingest, stored);
  row('core (api,enricher,worker)', 'visit', core, stored);
  row('all platform processes', 'visit', platform, stored);
  if (broker) row('Kafka broker (apart)', 'visit', [broker], stored);
  else console.log('Kafka broker: no pid under SERVICES_DIR (its CPU is not measured)');
  const all = sum(platform, (u) => u.cpuUs) / stored;
  if (one) {
    const t = threadKinds(one.threads);
    console.log(
      `${'one process (embedded)'.padEnd(27)}${pad('visit', 9)}${pad(figure(one.cpuUs), 8)}${pad('', 11)}${pad('', 9)}${[t['event loop'], t.helpers, t.ClickHouse].map((k) => pad(figure(k), 12)).join('')}${pad(one.peakRssMb.toFixed(0), 12)}`,
    );
  }
  console.log('');
  for (const u of platform)
    console.log(
      `${u.name}: CPU µs per ${u.kind === 'ingest' ? 'redirect' : 'visit'} by thread: ${u
        .threads!.map(([name, us]) => `${name} ${(us / (u.answered ?? stored)).toFixed(1)}`)
        .filter((text) => !text.endsWith(' 0.0'))
        .join(', ')}`,
    );
  if (one) {
    console.log(
      `one process (embedded): ${one.answered} redirects, ${one.rps.toFixed(0)}/s, p50 ${one.p50} ms, p99 ${one.p99} ms, drain ${one.drainS.toFixed(1)} s, ${one.inserts} inserts into visits (${one.rowsPerInsert.toFixed(0)} rows each, in the measured span); CPU µs per visit by thread: ${one.threads.map(([name, us]) => `${name} ${us.toFixed(1)}`).join(', ')}`,
    );
    const ratio = all / one.cpuUs;
    console.log(
      `\nservices CPU per stored visit / one-process: ${all.toFixed(1)} / ${one.cpuUs.toFixed(1)} µs = ${ratio.toFixed(2)}× (target ≤ ${TARGET_RATIO}×): ${ratio <= TARGET_RATIO ? 'within target' : 'ABOVE target'}`,
    );
  }
  console.log(
    `publish-to-queryable delay (a trickle of ${c.delay.answered} visits, ${TRICKLE.perNode}/s per node; the visit list read every 50 ms): p50 ${c.delay.p50} ms, p95 ${c.delay.p95} ms, p99 ${c.delay.p99} ms, max ${c.delay.max} ms`,
  );
  for (const line of c.exact) console.log(line);
  if (c.failures.length > 0) {
    console.error(`NOT stored exactly once: ${c.failures.join('; ')}`);
    return false;
  }
  console.log('every answered visit is stored exactly once');
  return true;
}

// ---------------------------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------------------------

let servicesState: Services | undefined;
const bound = setTimeout(() => {
  console.error(`benchmark failed: not done within ${BOUND_MS / 1000} s; every process it started is stopped`);
  killAll();
  servicesDown(servicesState?.started ?? []);
  process.exit(1);
}, BOUND_MS);
const nodes: Node[] = [];
const dirs: string[] = [];
let onePlatform: Figures | undefined;
let cluster: ClusterFigures | undefined;
let failed = false;
try {
  servicesState = services();
  console.log(
    `node ${process.version}; ${seconds} s of redirects from ${connections} connections, ${rate > 0 ? `${rate}/s offered` : 'as fast as answered'}, browser user agent; ${loadPinned() ? 'every platform process on every core, autocannon pinned to core 1' : 'cores not pinned (no taskset or one core)'}`,
  );
  console.log(`before the runs: ${await otherLoad()}; ${DATA_ROOT.note}`);
  const shape = { seconds, connections, rate };
  if (process.env.CLUSTER_ONLY !== '1') onePlatform = await measurePlatform('embedded', shape, DATA_ROOT.dir);
  cluster = await measureCluster(servicesState.env, servicesState.dir, nodes, dirs);
  console.log(`after the runs: ${await otherLoad()}`);
} catch (error) {
  failed = true;
  console.error(`benchmark failed: ${(error as Error).message}`);
} finally {
  killAll();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  servicesDown(servicesState?.started ?? []);
  clearTimeout(bound);
}

if (cluster) failed = !report(cluster, onePlatform) || failed;
process.exit(failed ? 1 : 0);
