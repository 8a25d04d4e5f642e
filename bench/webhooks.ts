// Webhook delivery throughput, and what a visit.new subscription on every link costs the enricher.
//   bash bench/run.sh webhooks [deliveries] [visits]
// defaults 20 000 deliveries and 100 000 visits. Targets (issue 7): ≥ 2 000 deliveries/s from one
// worker process to a local receiver; the enricher loses ≤ 10 % of its throughput when every link
// has a visit.new subscription.
//
// The receiver is a separate process (node:http on loopback, answering 200 with keep-alive).
// Embedded (no REDIS_URL / KAFKA_BROKERS): the in-process event bus and job runner; with them,
// Kafka and BullMQ on Redis. Part 1 publishes `deliveries` visit.new events (through the event
// bus, the dispatcher and the delivery jobs, as the enricher's events travel) for an owner with 4
// subscribed webhooks, and counts attempts logged in webhook_deliveries per second. Part 2 drains
// `visits` visits through one enricher, in pairs of runs (BENCH_PAIRS, default 5): one for an owner
// with no webhook and one for an owner whose every link is subscribed (a visit.new webhook on the
// owner), while the worker role delivers every event to the receiver; the loss is the median of
// the pairs' losses. With Kafka (the production topology) the enricher
// runs in this process and the worker in a process of its own, as deployed, once at its default
// WORKER_NICE and once at the priority it was started with; embedded, both share this one process
// and its event loop (the one-process mode), so every delivery is CPU taken from the enricher.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { v7 as uuidv7 } from 'uuid';
import { startVisitConsumer } from '#services/enricher/visit-consumer.js';
import { startWorker } from '#services/worker/worker.js';
import type { Context } from '#shared/context.js';
import { createEventBus } from '#shared/events/events.js';
import { createAccount } from '#tests/support/accounts.js';
import { uniqueName } from '#tests/support/context.js';
import { waitFor } from '#tests/support/wait.js';
import { insertWebhook } from '#tests/support/webhooks.js';
import { metricTotal } from '#shared/metrics.js';
import { TOPICS } from '#shared/message-log/topics.js';
import type { RawVisit } from '#shared/visits/raw-visit.js';
import { WEBHOOKS_VERSION_KEY } from '#shared/webhooks/delivery.js';
import { runBench } from './lib/context.js';

const deliveries = Number(process.argv[2] ?? 20_000);
const visits = Number(process.argv[3] ?? 100_000);
if (![deliveries, visits].every(Number.isInteger) || deliveries < 1000 || visits < 30_000) {
  // A run is timed from the enricher's first stored batch (of up to 10 000 visits) to its last.
  console.error('usage: bash bench/run.sh webhooks [deliveries ≥ 1000] [visits ≥ 30000]');
  process.exit(1);
}
const pairs = Number(process.env.BENCH_PAIRS ?? 5);
if (!Number.isInteger(pairs) || pairs < 1) {
  console.error('BENCH_PAIRS: a whole number of pairs of runs, at least 1');
  process.exit(1);
}
const WEBHOOKS = 4;

/** The receiver, in a child process: answers every POST 200 once its body is read. */
async function startReceiver(): Promise<{ url: string; stop(): void }> {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const http = require('node:http');
       const server = http.createServer((req, res) => { req.resume(); req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok')); });
       server.keepAliveTimeout = 60000;
       server.listen(0, '127.0.0.1', () => process.stdout.write(String(server.address().port) + '\\n'));`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const [chunk] = (await once(child.stdout, 'data')) as [Buffer];
  return { url: `http://127.0.0.1:${chunk.toString().trim()}/hook`, stop: () => child.kill() };
}

const attemptsLogged = async (context: Context, webhookIds: string[]) => {
  const row = await context.db.db
    .selectFrom('webhook_deliveries')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('webhook_id', 'in', webhookIds)
    .executeTakeFirstOrThrow();
  return Number(row.n);
};

/**
 * Watches a counter of this process every 10 ms until it has grown by `amount` from now; `rate()`
 * then gives its growth per second from its first change to its last: throughput once the work
 * runs, without its start (a consumer group join, which varied by a second and more from run to run).
 */
async function counterGrowth(metric: Parameters<typeof metricTotal>[0], amount: number, what: string) {
  const base = await metricTotal(metric);
  return {
    async rate(): Promise<{ perSecond: number; seconds: number }> {
      const deadline = performance.now() + 600_000;
      let first: { at: number; value: number } | undefined;
      let last = { at: 0, value: base };
      while (last.value - base < amount) {
        if (performance.now() > deadline) throw new Error(`${amount} ${what} not reached within 600 s`);
        await sleep(10);
        const value = await metricTotal(metric);
        if (value === last.value) continue;
        last = { at: performance.now(), value };
        first ??= last;
      }
      if (last.value === first!.value) throw new Error(`all ${amount} ${what} came at once: raise the amount`);
      const seconds = (last.at - first!.at) / 1000;
      return { perSecond: (last.value - first!.value) / seconds, seconds };
    },
  };
}

/** The single count() a ClickHouse query answers. */
async function clickhouseCount(context: Context, query: string, params: Record<string, unknown> = {}): Promise<number> {
  const result = await context.analytics.client.query({ query, query_params: params, format: 'JSONEachRow' });
  return Number((await result.json<{ n: number }>())[0]!.n);
}

const visitData = (i: number, subdomain: string) => ({
  visit_id: uuidv7(),
  ts: new Date().toISOString(),
  kind: 'visit',
  link_id: `l_bench${i % 50}`,
  slug: `s${i % 50}`,
  subdomain,
  ip_public: `81.2.${(i >> 8) % 256}.${i % 256}`,
  country: 'GB',
  region: 'England',
  city: 'London',
  browser: 'Chrome',
  os: 'Windows',
  device_type: 'desktop',
  referrer: 'https://news.example/item',
  is_unique: i % 3 === 0,
});

await runBench({ LOG_LEVEL: 'silent', WEBHOOK_ALLOWLIST: '127.0.0.1', ENRICHER_BATCH_WAIT_MS: '500' }, async (context) => {
  const receiver = await startReceiver();
  let worker: { stop(): Promise<void> } = await startWorker(context);
  try {
    console.log(
      `mode: event bus ${context.messageLog.kind}, jobs ${context.jobs.kind}, database ${context.config.database.kind}; WEBHOOK_CONCURRENCY ${context.config.webhooks.concurrency}, per webhook ${context.config.webhooks.perWebhook}`,
    );

    // Part 1: deliveries per second.
    const owner = await createAccount(context);
    const hooks = [];
    for (let i = 0; i < WEBHOOKS; i++) {
      hooks.push((await insertWebhook(context, { owner_id: owner.id, url: receiver.url, events: ['visit.new'] })).row);
    }
    await context.cache.bump(WEBHOOKS_VERSION_KEY);
    const ids = hooks.map((hook) => hook.id);
    const events = createEventBus(context);
    const perEvent = deliveries / WEBHOOKS;
    // Deliveries per second from the first logged attempt to the last (webhook_attempts_total);
    // the log is checked afterwards.
    const expected = Math.floor(perEvent) * WEBHOOKS;
    const rating = (await counterGrowth(context.metrics.webhookAttempts, expected, 'attempts')).rate();
    for (let start = 0; start < perEvent; start += 500) {
      const drafts = [];
      for (let i = start; i < Math.min(perEvent, start + 500); i++)
        drafts.push({ type: 'visit.new' as const, ownerId: owner.id, subdomain: 'bench', data: visitData(i, 'bench') });
      await events.emitMany(drafts);
    }
    const { perSecond: rate, seconds } = await rating;
    await waitFor(async () => (await attemptsLogged(context, ids)) >= expected, 600_000, { intervalMs: 200, message: `${expected} attempts` });
    const failed = await context.db.db
      .selectFrom('webhook_deliveries')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('webhook_id', 'in', ids)
      .where('success', '=', false)
      .executeTakeFirstOrThrow();
    console.log(
      `deliveries: ${expected} to ${WEBHOOKS} webhooks, ${seconds.toFixed(2)} s from the first to the last: ${rate.toFixed(0)} deliveries/s from one process (${failed.n} failed; target ≥ 2000: ${rate >= 2000 ? 'within target' : 'BELOW target'})`,
    );

    // Part 2: the enricher, without and with a visit.new subscription on every link.
    const drain = async (ownerId: string) => {
      const subdomain = uniqueName('wh').toLowerCase().slice(0, 40);
      for (let start = 0; start < visits; start += 5_000) {
        const messages = [];
        for (let i = start; i < Math.min(visits, start + 5_000); i++) {
          const value: RawVisit = {
            visit_id: uuidv7(),
            ts: new Date().toISOString(),
            kind: 'visit',
            owner_id: ownerId,
            expects_beacon: false,
            subdomain,
            link_id: `l_wh${i % 50}`,
            slug: `s${i % 50}`,
            ip_public: `81.2.${(i >> 8) % 256}.${i % 256}`,
            user_agent: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
            referrer: i % 3 === 0 ? 'https://news.example/item' : '',
            accept_language: 'en-GB,en;q=0.9',
            query: '',
          };
          messages.push({ key: value.link_id, value: JSON.stringify(value) });
        }
        await context.messageLog.publish(TOPICS.visitsRaw, messages);
      }
      // A run starts once ClickHouse has no merge running (those of earlier runs' parts would take
      // CPU from whichever run they fell into: the largest noise between runs).
      await waitFor(async () => (await clickhouseCount(context, 'SELECT count() AS n FROM system.merges')) === 0, 120_000, {
        intervalMs: 100,
        message: 'no ClickHouse merge running',
      });
      // From the enricher's first stored batch to its last (visits_inserted_total), not its start.
      const growth = await counterGrowth(context.metrics.visitsInserted, visits, 'rows');
      const enricher = await startVisitConsumer(context);
      const { perSecond } = await growth.rate();
      const stored = () => clickhouseCount(context, 'SELECT count() AS n FROM visits WHERE subdomain = {subdomain:String}', { subdomain });
      await waitFor(async () => (await stored()) >= visits, 600_000, { intervalMs: 200, message: `${visits} rows` });
      await enricher.stop();
      return perSecond;
    };
    const quiet = await createAccount(context);
    const subscribed = await createAccount(context);
    const hook = (await insertWebhook(context, { owner_id: subscribed.id, url: receiver.url, events: ['visit.new'] })).row;
    await context.cache.bump(WEBHOOKS_VERSION_KEY);
    let handed = 0;

    const compare = async (label: string, control = false) => {
      // After a warm-up run (not counted: the enricher's first run compiles its code), pairs of
      // adjacent runs, without then with, the pair's order alternating (A B, B A, …) so that drift of
      // the machine and the growing visits table weigh on both sides alike; the loss is the median of
      // the pairs' losses. Before each run the worker has made every delivery it was handed: a run
      // measures the enricher while the worker delivers that run's events, not an earlier backlog.
      const rates: Record<'without' | 'with', number[]> = { without: [], with: [] };
      let during = 0;
      const caughtUp = () =>
        waitFor(async () => (await attemptsLogged(context, [hook.id])) >= handed, 600_000, { intervalMs: 200, message: `${handed} deliveries (the backlog)` });
      await drain(quiet.id);
      for (let pair = 0; pair < pairs; pair++) {
        for (const subscribedRun of pair % 2 === 0 ? [false, true] : [true, false]) {
          await caughtUp();
          const before = await attemptsLogged(context, [hook.id]);
          const rate = await drain(subscribedRun && !control ? subscribed.id : quiet.id);
          if (subscribedRun && !control) {
            handed += visits;
            during += (await attemptsLogged(context, [hook.id])) - before;
          }
          rates[subscribedRun ? 'with' : 'without'].push(rate);
        }
      }
      await caughtUp();
      const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
      const losses = rates.with.map((rate, pair) => (1 - rate / rates.without[pair]!) * 100);
      const loss = median(losses);
      const runs = (values: number[]) => values.map((value) => value.toFixed(0)).join(', ');
      console.log(`${label}:`);
      if (control) {
        console.log(`  enricher, first run of each pair: ${median(rates.without).toFixed(0)} visits/s median (runs: ${runs(rates.without)})`);
        console.log(`  second run of each pair: ${median(rates.with).toFixed(0)} visits/s median (runs: ${runs(rates.with)})`);
      } else {
        console.log(`  enricher without subscriptions: ${median(rates.without).toFixed(0)} visits/s median (runs: ${runs(rates.without)})`);
        console.log(
          `  with a visit.new subscription on every link: ${median(rates.with).toFixed(0)} visits/s median (runs: ${runs(rates.with)}); ` +
            `${(during / rates.with.length).toFixed(0)} of a run's ${visits} deliveries made during it, the rest after`,
        );
      }
      console.log(`  loss per pair: ${losses.map((value) => `${value.toFixed(1)} %`).join(', ')}`);
      if (control) console.log(`  median of ${pairs} pairs: ${loss.toFixed(1)} % (both sides alike: what the measurement's noise alone makes of nothing)`);
      else
        console.log(
          `  enricher throughput loss (median of ${pairs} pairs): ${loss.toFixed(1)} % (target ≤ 10 %): ${loss <= 10 ? 'within target' : 'ABOVE target'}`,
        );
    };

    const { messageLog: logConfig, database } = context.config;
    if (logConfig.kind === 'kafka' && database.kind === 'postgres') {
      // The production topology: the worker role in its own process, on the same Kafka, Redis and
      // Postgres, at its default WORKER_NICE and, for comparison, at the priority it was started with.
      await worker.stop();
      for (const nice of [undefined, '0']) {
        // Its own data directory: embedded chDB (without CLICKHOUSE_URL) is one process's, and the
        // checkout's ./data is not the benchmark's to touch.
        const dataDir = mkdtempSync(join(tmpdir(), 'linktrack-bench-worker-'));
        const child = spawn(process.execPath, [new URL('../services/worker/main.js', import.meta.url).pathname], {
          stdio: ['ignore', 'ignore', 'inherit'],
          env: {
            ...process.env,
            SERVICE_ROLES: 'worker',
            PORT: String(20_000 + Math.floor(Math.random() * 20_000)),
            LOG_LEVEL: 'warn',
            DATABASE_URL: database.url,
            // The key that sealed the benchmark's webhook secrets: the worker opens them to sign.
            SECRETS_KEY: context.config.secrets.key!.toString('base64'),
            DATA_DIR: dataDir,
            KAFKA_TOPIC_PREFIX: logConfig.topicPrefix,
            REDIS_PREFIX: context.config.redisPrefix,
            WEBHOOK_ALLOWLIST: '127.0.0.1',
            ...(nice === undefined ? {} : { WORKER_NICE: nice }),
          },
        });
        const exited = once(child, 'exit');
        let stopping = false;
        // A worker that dies (start-up failure) would leave the run waiting for deliveries: fail now.
        child.on('exit', (code) => {
          if (stopping) return;
          console.error(`the worker process exited (code ${code}) during the benchmark`);
          receiver.stop();
          process.exit(1);
        });
        worker = {
          stop: async () => {
            stopping = true;
            child.kill();
            await exited;
            rmSync(dataDir, { recursive: true, force: true });
          },
        };
        await compare(
          `part 2: the enricher in this process, the worker role in a process of its own ${nice === undefined ? '(WORKER_NICE default, 19)' : `(WORKER_NICE=${nice}: not lowered)`}`,
        );
        await worker.stop();
      }
      worker = { stop: async () => undefined };
    } else {
      await compare('part 2: the enricher and the worker role in this one process (one event loop; WORKER_NICE applies to a worker-only process)');
    }
    // The noise floor, last (the events of its runs are left for no dispatcher): no worker running,
    // and both runs of each pair for the owner with no webhook.
    await worker.stop();
    worker = { stop: async () => undefined };
    await compare('control: both runs of each pair alike (no subscription, no worker)', true);
  } finally {
    await worker.stop();
    receiver.stop();
  }
});
