// Throughput cost of authentication + rate limiting per request: a bearer-token route with the `api`
// bucket against an unauthenticated, unlimited route with the same trivial handler, measured side by
// side in one run, alternating the two routes (plain first in odd rounds, authed first in even ones,
// so a drift in machine speed does not always favour the same route) so machine noise hits both alike.
//   bash bench/run.sh auth-overhead [seconds-per-round] [rounds]
// Embedded stores (PGlite, in-memory cache and rate-limit store) unless DATABASE_URL / REDIS_URL are set.
//
// The load generator is autocannon's CLI (`--json`) in a child process, not autocannon in this
// process: on a 2-core machine that keeps the server's event loop on a core of its own. In process,
// autocannon's per-request CPU would be added to both routes alike and so would dilute the ratio
// (understate the cost); absolute req/s still depend on the machine and on sharing it with the client.
// Besides req/s, the server's own CPU time per request (process.cpuUsage() of this process, which is
// only the server: autocannon is a child) is reported: it is far less sensitive than throughput to
// other work competing for the cores, so it tells a noisy run from a real regression.
// With `taskset` (util-linux) and two cores or more, the server (every thread of this process) is
// pinned to core 0 and autocannon to core 1, so that neither steals the other's core and the server
// is CPU-bound: its req/s is then 1 / its CPU time per request, and the rounds agree within a few %.
// Why the cost reads higher than the work added: `perf record` of the server shows about 6 µs of
// the authed route's extra ~16 µs per request in the kernel's loopback delivery (the softirq that
// wakes autocannon on the other core, `_raw_spin_unlock_irqrestore` under tcp_write_xmit): the
// slower the server, the more often the client core has gone idle and must be woken, which in a VM
// costs far more than waking a busy core. Our own code (authenticator, limiter, anti-spam check,
// setting the six headers) is about 1 µs in a loop of a million calls; Node's validation and
// serialisation of the six rate-limit response headers, Fastify's header bookkeeping and parsing
// the Authorization request header most of the rest.
// On a shared VM, interference from outside slows single runs by up to half (a run of either route
// may take 50 % more CPU per request than the next): hence 9 rounds by default, medians as the
// figure, and the best run of each route (interference only ever slows a run) printed beside it.
// Under tsx every request also pays for tsx's transform (esbuild's __name helpers, about 9 µs per request
// here), which dilutes the ratio: the built JS (`node dist/...`) shows a somewhat higher cost.
import type { AddressInfo } from 'node:net';
import { buildApp } from '#services/app.js';
import { defineRoute } from '#shared/http/route.js';
import { createAccount, loginCookie, mintToken } from '#tests/support/accounts.js';
import { runBench } from './lib/context.js';
import { bestRps, cannon, median, otherLoad, pad, percent, pinningNote, type Run } from './lib/load.js';

const seconds = Number(process.argv[2] ?? 3);
const rounds = Number(process.argv[3] ?? 9);
const CONNECTIONS = 32;
const WARMUP_SECONDS = 2;
const TARGET_COST = 0.15;
if (!Number.isInteger(seconds) || seconds < 1 || !Number.isInteger(rounds) || rounds < 1) {
  console.error('usage: bash bench/run.sh auth-overhead [seconds-per-round ≥ 1] [rounds ≥ 1]');
  process.exit(1);
}

const handler = async () => ({ ok: true, n: 1 });
const benchRoutes = [
  defineRoute({
    operationId: 'benchPlain',
    method: 'GET',
    path: '/bench/plain',
    summary: 'Benchmark: no auth, no rate limit',
    tags: ['bench'],
    auth: { kind: 'none' },
    bucket: null,
    handler,
  }),
  defineRoute({
    operationId: 'benchAuthed',
    method: 'GET',
    path: '/bench/authed',
    summary: 'Benchmark: bearer token with links:read, api bucket',
    tags: ['bench'],
    auth: { kind: 'scope', scope: 'links:read' },
    bucket: 'api',
    handler,
  }),
];

await runBench({ RATE_LIMIT_API: '1000000000:60', RATE_LIMIT_DEFAULT: '1000000000:60', LOG_LEVEL: 'silent' }, async (context) => {
  const embedded = context.db.kind === 'pglite' && context.cache.kind === 'memory';
  const mode = embedded ? 'embedded' : 'services';
  console.log(
    `mode: ${mode} (database ${context.db.kind}, cache and rate-limit store ${context.cache.kind}); node ${process.version}; ` +
      `${seconds} s per run, ${rounds} rounds, ${CONNECTIONS} connections, pipelining 1, autocannon in a child process; ${pinningNote()}`,
  );
  console.log(`before the runs: ${await otherLoad()}`);

  const { app } = await buildApp(context, { extraRoutes: benchRoutes });
  try {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

    const account = await createAccount(context);
    const cookie = await loginCookie(app, account.email);
    const { token } = await mintToken(app, cookie, new URL(context.config.publicUrl).origin, { name: 'bench', scopes: ['links:read'] });
    const authHeaders = { authorization: `Bearer ${token}` };

    // One request each over the real socket before loading them.
    const plainCheck = await fetch(`${base}/bench/plain`);
    const authedCheck = await fetch(`${base}/bench/authed`, { headers: authHeaders });
    const unauthCheck = await fetch(`${base}/bench/authed`);
    if (plainCheck.status !== 200) throw new Error(`GET /bench/plain answered ${plainCheck.status}: ${await plainCheck.text()}`);
    if (authedCheck.status !== 200) throw new Error(`GET /bench/authed answered ${authedCheck.status}: ${await authedCheck.text()}`);
    if (unauthCheck.status !== 401) throw new Error(`GET /bench/authed without a token answered ${unauthCheck.status}, expected 401`);
    if (!authedCheck.headers.get('ratelimit-limit')) throw new Error('GET /bench/authed carried no RateLimit-Limit header: the api bucket is not counted');

    const routes = [
      { name: 'plain', url: `${base}/bench/plain`, headers: {} as Record<string, string> },
      { name: 'authed', url: `${base}/bench/authed`, headers: authHeaders },
    ] as const;

    // Warm-up (JIT, token cache, connection setup), not counted.
    for (const route of routes) await cannon(route.url, { durationSec: WARMUP_SECONDS, connections: CONNECTIONS, headers: route.headers });

    const results: Record<'plain' | 'authed', Run[]> = { plain: [], authed: [] };
    for (let round = 1; round <= rounds; round++) {
      const rows: string[] = [];
      for (const route of round % 2 === 1 ? routes : [...routes].reverse()) {
        const run = await cannon(route.url, { durationSec: seconds, connections: CONNECTIONS, headers: route.headers });
        results[route.name].push(run);
        rows.push(
          `  ${route.name.padEnd(7)}${pad(run.rps.toFixed(0), 10)}${pad(run.p50.toFixed(0), 9)}${pad(run.p99.toFixed(0), 9)}${pad(String(run.total), 11)}${pad(run.cpuUs.toFixed(1), 13)}`,
        );
      }
      const plainRun = results.plain[round - 1]!;
      const authedRun = results.authed[round - 1]!;
      const ratio = authedRun.rps / plainRun.rps;
      console.log(`\nround ${round}/${rounds}`);
      console.log(`  ${'route'.padEnd(7)}${pad('req/s', 10)}${pad('p50 ms', 9)}${pad('p99 ms', 9)}${pad('requests', 11)}${pad('CPU µs/req', 13)}`);
      for (const row of rows) console.log(row);
      console.log(
        `  authed/plain ${ratio.toFixed(3)}: cost ${percent(1 - ratio)} of throughput; server CPU per request +${percent(authedRun.cpuUs / plainRun.cpuUs - 1)}`,
      );
    }

    const plain = median(results.plain.map((run) => run.rps));
    const authed = median(results.authed.map((run) => run.rps));
    const ratio = authed / plain;
    const cost = 1 - ratio;
    const perRoundCosts = results.plain.map((run, index) => 1 - results.authed[index]!.rps / run.rps);
    const bestCost = 1 - bestRps(results.authed) / bestRps(results.plain);
    const plainCpu = median(results.plain.map((run) => run.cpuUs));
    const authedCpu = median(results.authed.map((run) => run.cpuUs));
    console.log(`\nsummary (${mode})`);
    console.log(
      `plain: ${plain.toFixed(0)} req/s (median of ${rounds}), p50 ${median(results.plain.map((run) => run.p50)).toFixed(0)} ms, p99 ${median(results.plain.map((run) => run.p99)).toFixed(0)} ms`,
    );
    console.log(
      `authed: ${authed.toFixed(0)} req/s (median of ${rounds}), p50 ${median(results.authed.map((run) => run.p50)).toFixed(0)} ms, p99 ${median(results.authed.map((run) => run.p99)).toFixed(0)} ms`,
    );
    console.log(`ratio authed/plain: ${ratio.toFixed(3)} (cost per round: ${perRoundCosts.map(percent).join(', ')}; median ${percent(median(perRoundCosts))})`);
    console.log(`best run of each route: cost ${percent(bestCost)} of throughput`);
    // Were the server CPU-bound, throughput would scale as 1 / CPU per request: cost = 1 - plain/authed.
    console.log(
      `server CPU per request: plain ${plainCpu.toFixed(1)} µs, authed ${authedCpu.toFixed(1)} µs (+${(authedCpu - plainCpu).toFixed(1)} µs, ` +
        `throughput cost if CPU-bound ${percent(1 - plainCpu / authedCpu)})`,
    );
    console.log(`after the runs: ${await otherLoad()}`);
    console.log(
      `auth + rate limit cost: ${(cost * 100).toFixed(1)} % of throughput (target ≤ ${TARGET_COST * 100} %): ${cost <= TARGET_COST ? 'within target' : 'OVER target'}`,
    );
  } finally {
    await app.close();
  }
});
