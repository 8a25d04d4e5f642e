// Redirect throughput and latency of the ingest edge against a bare Fastify app that answers a fixed
// 302, side by side in one run (alternating which goes first), on the same machine.
//   bash bench/run.sh redirect [seconds-per-round] [rounds]
//   bash bench/run.sh redirect [seconds-per-round] [rounds] routing
// Target: the edge keeps ≥ 70 % of the bare app's throughput. The `routing` mode (issue 40) runs,
// side by side on the edge, a plain link, a link with 10 rules none of which matches, one whose
// last rule matches, and a 3-way A/B split: each one's CPU per redirect within 5 % of the plain one's
// asked the same way (the last rule reads a query, so that link is held against the plain link with
// the same query; the query's own cost is printed as plain-query against plain).
//
// The edge runs as in production: host routing, the link cache, the redirect bucket (a limit high
// enough never to refuse), the visit handed to the buffered producer for every request and
// published to the in-process message log, request id, metrics and the access-log record (LOG_LEVEL
// silent here: the line is not written). The log's consumer commits every batch untouched, as a
// broker takes the visits out of an edge process: enrichment is the pipeline bench's to measure,
// and a log left to fill would keep 100 000 visits in this heap, which no edge does (the garbage
// collector then copies every visit twice, about 1.3 µs a request on this VM). Both apps live
// in this process, pinned to core 0; autocannon runs in a child process on core 1 (see lib/load.ts).
// 9 rounds of 3 s by default: on a shared VM single runs of either app vary by a third, so the
// figure is the ratio of the medians, with the ratio of the best runs (interference only ever
// slows a run) printed beside it.
import { get } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildApp } from '#services/app.js';
import { bareApp } from './lib/bare-app.js';
import { runBench } from './lib/context.js';
import { metricTotal } from '#shared/metrics.js';
import { TOPICS } from '#shared/message-log/topics.js';
import { claimSubdomain, createOwner } from '#tests/support/owners.js';
import { bestRps, cannon, median, otherLoad, pad, percent, pinningNote, type Run } from './lib/load.js';

const seconds = Number(process.argv[2] ?? 3);
const rounds = Number(process.argv[3] ?? 9);
const routing = process.argv[4] === 'routing';
const ROUTING_CPU_BUDGET = 0.05;
const CONNECTIONS = 32;
const TARGET_RATIO = 0.7;
if (!Number.isInteger(seconds) || seconds < 1 || !Number.isInteger(rounds) || rounds < 1) {
  console.error('usage: bash bench/run.sh redirect [seconds-per-round ≥ 1] [rounds ≥ 1]');
  process.exit(1);
}

/** The routing mode: four links on the edge, side by side, alternating their order per round. */
async function routingRuns(edgePort: number, host: string) {
  const headers = {
    host,
    'user-agent': 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
    'accept-language': 'en-GB,en;q=0.9',
  };
  const targets = [
    { name: 'plain', url: `http://127.0.0.1:${edgePort}/bench` },
    // The same plain link with the query the last rule reads: what a query costs by itself (its visit text, the attack check).
    { name: 'plain-query', url: `http://127.0.0.1:${edgePort}/bench?go=1` },
    { name: 'rules-none', url: `http://127.0.0.1:${edgePort}/rules` },
    { name: 'rules-last', url: `http://127.0.0.1:${edgePort}/rules?go=1` },
    { name: 'split-3', url: `http://127.0.0.1:${edgePort}/split` },
  ];
  console.log(`routing mode: ${seconds} s per run, ${rounds} rounds, ${CONNECTIONS} connections; ${pinningNote()}`);
  console.log(`before the runs: ${await otherLoad()}`);
  for (const target of targets) await cannon(target.url, { durationSec: 2, connections: CONNECTIONS, headers, expectStatus: 302 });
  const results = new Map<string, Run[]>(targets.map((target) => [target.name, []]));
  for (let round = 1; round <= rounds; round++) {
    const order = targets.map((_, index) => targets[(index + round) % targets.length]!);
    for (const target of order)
      results.get(target.name)!.push(await cannon(target.url, { durationSec: seconds, connections: CONNECTIONS, headers, expectStatus: 302 }));
    console.log(`round ${round}: ${targets.map((target) => `${target.name} ${results.get(target.name)![round - 1]!.cpuUs.toFixed(1)} µs`).join(', ')}`);
  }
  // Each routed link against the plain link asked the same way: rules-last's request carries the
  // query its last rule reads, and a query costs by itself (its visit text, the attack check), so
  // it is held against plain-query; the others against plain. Each ratio is the median of the
  // rounds' ratios (the two runs of a round are seconds apart).
  const cpuOf = (name: string) => median(results.get(name)!.map((run) => run.cpuUs));
  const baselineOf: Record<string, string> = { 'plain-query': 'plain', 'rules-none': 'plain', 'rules-last': 'plain-query', 'split-3': 'plain' };
  console.log(`\n${'link'.padEnd(12)}${pad('req/s', 10)}${pad('p99 ms', 9)}${pad('CPU µs/req', 13)}${pad('vs plain', 10)}${pad('vs same request', 28)}`);
  let within = true;
  for (const target of targets) {
    const runs = results.get(target.name)!;
    const cpu = cpuOf(target.name);
    const baseline = baselineOf[target.name];
    // The median of the rounds' ratios: both links of a ratio ran in the same round, so a slow spell of the machine cancels out.
    const ratio = baseline ? median(runs.map((run, round) => run.cpuUs / results.get(baseline)![round]!.cpuUs)) : 1;
    if (baseline && target.name !== 'plain-query' && ratio > 1 + ROUTING_CPU_BUDGET) within = false;
    console.log(
      `${target.name.padEnd(12)}${pad(median(runs.map((run) => run.rps)).toFixed(0), 10)}${pad(median(runs.map((run) => run.p99)).toFixed(0), 9)}` +
        `${pad(cpu.toFixed(1), 13)}${pad((cpu / cpuOf('plain')).toFixed(3), 10)}${pad(baseline ? `${ratio.toFixed(3)} (of ${baseline})` : '', 28)}`,
    );
  }
  console.log(`after the runs: ${await otherLoad()}`);
  console.log(
    `CPU per redirect of each routed link within ${percent(1 + ROUTING_CPU_BUDGET)} of the plain link's asked the same way: ${within ? 'yes' : 'NO'}`,
  );
}

await runBench({ RATE_LIMIT_REDIRECT: '1000000000:60', RATE_LIMIT_API: '1000000:60', LOG_LEVEL: 'silent' }, async (context) => {
  const closers: (() => Promise<void>)[] = [];
  try {
    const { app } = await buildApp(context);
    closers.push(() => app.close());
    const takenAway = await context.messageLog.consume({ groupId: 'bench-broker', topic: TOPICS.visitsRaw, maxBatch: 5_000, handler: async () => undefined });
    closers.push(() => takenAway.stop());
    await app.listen({ host: '127.0.0.1', port: 0 });
    const edgePort = (app.server.address() as AddressInfo).port;

    const owner = await createOwner(context, app);
    const subdomain = await claimSubdomain(app, owner);
    const created = await app.inject({
      method: 'POST',
      url: '/api/v1/links',
      headers: owner.auth,
      payload: { subdomain, target_url: 'https://example.com/landing', slug: 'bench' },
    });
    if (created.statusCode !== 201) throw new Error(`link creation failed: ${created.body}`);

    if (routing) {
      // Ten rules a Chrome on Windows with English matches none of (the user agent parsed, the query read), the last one `?go`.
      const rules = [
        ...['ios', 'android', 'macos'].map((os) => ({ condition: { type: 'os', values: [os] }, target_url: `https://example.com/${os}` })),
        ...['mobile', 'tablet'].map((device) => ({ condition: { type: 'device', values: [device] }, target_url: `https://example.com/${device}` })),
        ...['de', 'fr', 'es'].map((language) => ({ condition: { type: 'language', values: [language] }, target_url: `https://example.com/${language}` })),
        { condition: { type: 'browser', values: ['Firefox'] }, target_url: 'https://example.com/firefox' },
        { condition: { type: 'query', name: 'go' }, target_url: 'https://example.com/go' },
      ];
      const variants = [1, 2, 3].map((n) => ({ target_url: `https://example.com/v${n}`, weight: 1 }));
      for (const payload of [
        { slug: 'rules', target_url: 'https://example.com/landing', rules },
        { slug: 'split', target_url: 'https://example.com/landing', variants },
      ]) {
        const made = await app.inject({ method: 'POST', url: '/api/v1/links', headers: owner.auth, payload: { subdomain, ...payload } });
        if (made.statusCode !== 201) throw new Error(`link creation failed: ${made.body}`);
      }
      await routingRuns(edgePort, `${subdomain}.localhost`);
      return;
    }

    const bare = bareApp();
    closers.push(() => bare.close());
    await bare.listen({ host: '127.0.0.1', port: 0 });
    const barePort = (bare.server.address() as AddressInfo).port;

    const host = `${subdomain}.localhost`;
    const targets = [
      { name: 'bare', url: `http://127.0.0.1:${barePort}/bench`, headers: { host } },
      { name: 'edge', url: `http://127.0.0.1:${edgePort}/bench`, headers: { host } },
    ] as const;
    // fetch() will not send another Host: one plain request over the socket checks the edge.
    const check = await new Promise<{ status: number; location?: string }>((resolve, reject) =>
      get(targets[1].url, { headers: { host } }, (response) => {
        response.resume();
        resolve({ status: response.statusCode ?? 0, location: response.headers.location });
      }).once('error', reject),
    );
    if (check.status !== 302 || check.location !== 'https://example.com/landing') throw new Error(`the edge answered ${check.status}`);

    console.log(
      `mode: ${context.db.kind}, cache ${context.cache.kind}, message log ${context.messageLog.kind}; node ${process.version}; ${seconds} s per run, ` +
        `${rounds} rounds, ${CONNECTIONS} connections, pipelining 1; ${pinningNote()}`,
    );
    console.log(`before the runs: ${await otherLoad()}`);
    for (const target of targets) await cannon(target.url, { durationSec: 2, connections: CONNECTIONS, headers: target.headers, expectStatus: 302 });

    const results: Record<'bare' | 'edge', Run[]> = { bare: [], edge: [] };
    for (let round = 1; round <= rounds; round++) {
      for (const target of round % 2 === 1 ? targets : [...targets].reverse()) {
        results[target.name].push(await cannon(target.url, { durationSec: seconds, connections: CONNECTIONS, headers: target.headers, expectStatus: 302 }));
      }
      const [b, e] = [results.bare[round - 1]!, results.edge[round - 1]!];
      console.log(
        `round ${round}: bare ${b.rps.toFixed(0)} req/s (p99 ${b.p99} ms, ${b.cpuUs.toFixed(1)} µs CPU), edge ${e.rps.toFixed(0)} req/s ` +
          `(p99 ${e.p99} ms, ${e.cpuUs.toFixed(1)} µs CPU): ratio ${(e.rps / b.rps).toFixed(3)}`,
      );
    }
    const bareRps = median(results.bare.map((run) => run.rps));
    const edgeRps = median(results.edge.map((run) => run.rps));
    const ratio = edgeRps / bareRps;
    console.log(`\n${'app'.padEnd(6)}${pad('req/s', 10)}${pad('p50 ms', 9)}${pad('p99 ms', 9)}${pad('CPU µs/req', 13)}`);
    for (const name of ['bare', 'edge'] as const) {
      const runs = results[name];
      console.log(
        `${name.padEnd(6)}${pad(median(runs.map((run) => run.rps)).toFixed(0), 10)}${pad(median(runs.map((run) => run.p50)).toFixed(0), 9)}` +
          `${pad(median(runs.map((run) => run.p99)).toFixed(0), 9)}${pad(median(runs.map((run) => run.cpuUs)).toFixed(1), 13)}`,
      );
    }
    const best = bestRps(results.edge) / bestRps(results.bare);
    console.log(`best run of each app: edge/bare ${best.toFixed(3)} (${percent(best)})`);
    const accepted = await metricTotal(context.metrics.visitsAccepted);
    const dropped = await metricTotal(context.metrics.visitsDropped);
    console.log(`visits accepted by the producer: ${accepted}, dropped: ${dropped}`);
    console.log(`after the runs: ${await otherLoad()}`);
    console.log(
      `edge/bare throughput: ${ratio.toFixed(3)} (${percent(ratio)}; target ≥ ${percent(TARGET_RATIO)}): ${ratio >= TARGET_RATIO ? 'within target' : 'BELOW target'}`,
    );
  } finally {
    for (const close of closers.reverse()) await close().catch(() => undefined);
  }
});
