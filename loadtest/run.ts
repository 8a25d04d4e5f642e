// `make loadtest`: the platform under load from outside, as people and integrations use it, with
// thresholds that fail the run, then proof that every visit answered was stored.
//   make loadtest                      20 s a scenario, on a platform started here (embedded stores)
//   make loadtest-short                3 s a scenario (what .ci/run runs)
//   BASE_URL=http://127.0.0.1:8080 ADMIN_EMAIL=… ADMIN_PASSWORD=… make loadtest   a running platform
// The load comes from autocannon (MIT) in this process; the platform started here is another
// process. docs/operations.md, "Load test", lists the settings.
import { cpus } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { otherLoad } from '#bench/lib/load.js';
import { killAll, metricSum, storedIn } from '#tests/support/platform-process.js';
import { startPlatform, type Platform } from './platform.js';
import { countFailures, summaryTable, thresholdFailures, type Count } from './report.js';
import { apiMix } from './scenarios/api-mix.js';
import { beacons } from './scenarios/beacons.js';
import { exportWhileRedirecting } from './scenarios/export.js';
import { redirects } from './scenarios/redirects.js';
import type { ScenarioResult, StoredWhere } from './scenarios/result.js';
import { seed } from './seed.js';
import { settingsFromEnv, type Settings } from './settings.js';

/** Pause between two reads of the stored counts while the pipeline drains, and between the two reads that must agree after. */
const POLL_MS = 250;
const SETTLE_MS = 1_500;

/** The stored visits of subdomains, summed. */
async function storedOf(base: string, where: StoredWhere[]): Promise<Count['stored']> {
  const each = await Promise.all(where.map(({ token, subdomain }) => storedIn(base, token, { subdomain })));
  return each.reduce((sum, one) => ({ rows: sum.rows + one.rows, rollups: sum.rollups + one.rollups }), { rows: 0, rollups: 0 });
}

/**
 * Waits until every scenario's stored visits reach its answers (or the deadline passes), then until
 * two reads SETTLE_MS apart agree (a visit stored twice would show after the first); the counts and
 * the seconds the pipeline took to drain after the last load (undefined past the deadline).
 */
async function drain(base: string, scenarios: ScenarioResult[], deadlineS: number): Promise<{ counts: Map<ScenarioResult, Count>; drainS?: number }> {
  const ended = performance.now();
  const deadline = ended + deadlineS * 1000;
  const read = async () =>
    new Map(
      await Promise.all(
        scenarios.map(async (result) => [result, { answered: result.visits!.answered, stored: await storedOf(base, result.visits!.where) }] as const),
      ),
    );
  let counts = await read();
  const reached = () => [...counts.values()].every(({ answered, stored }) => stored.rows >= answered && stored.rollups >= answered);
  while (!reached()) {
    if (performance.now() > deadline) return { counts };
    await sleep(POLL_MS);
    counts = await read();
  }
  const drainS = (performance.now() - ended) / 1000;
  for (;;) {
    await sleep(SETTLE_MS);
    const again = await read();
    const same = [...again].every(
      ([result, { stored }]) => stored.rows === counts.get(result)!.stored.rows && stored.rollups === counts.get(result)!.stored.rollups,
    );
    counts = again;
    if (same || performance.now() > deadline) return { counts, drainS };
  }
}

/** A scenario's start and end on the console, so a long run shows where it is. */
async function step<T>(name: string, run: () => Promise<T>): Promise<T> {
  const started = performance.now();
  process.stdout.write(`${name} … `);
  const result = await run();
  console.log(`${((performance.now() - started) / 1000).toFixed(1)} s`);
  return result;
}

async function main(settings: Settings, platform: Platform): Promise<boolean> {
  const { base } = platform;
  const seeded = await step(`seeding ${settings.owners} owners through the API`, () => seed(base, platform.admin, settings));

  const results: ScenarioResult[] = [];
  results.push(
    await step(`redirects: ${seeded.redirectLinks.length} links on ${settings.owners} short hosts`, () => redirects(base, settings, seeded.redirectLinks)),
  );
  results.push(await step('beacons: consent + collect', () => beacons(base, settings, { token: seeded.beaconOwner.token, subdomain: seeded.beaconSubdomain })));
  results.push(await step('API mix: links, stats, visit list', () => apiMix(base, settings, seeded.owners)));
  results.push(...(await step('CSV exports while redirects run', () => exportWhileRedirecting(base, settings, seeded.exporter, seeded.exportLinks))));

  const counted = results.filter((result) => result.visits);
  const { counts, drainS } = await step(`waiting for the pipeline to store every visit answered (at most ${settings.drainSeconds} s)`, () =>
    drain(base, counted, settings.drainSeconds),
  );

  const rows = results.map((result) => ({ result, failures: thresholdFailures(result, settings), count: counts.get(result) }));
  console.log(`\n${summaryTable(rows, settings)}\n`);
  for (const result of results) for (const note of result.notes) console.log(note);
  console.log(
    drainS === undefined
      ? `not every visit was stored within ${settings.drainSeconds} s of the last load`
      : `every visit answered was stored ${drainS.toFixed(1)} s after the last load`,
  );
  // What the platform says it lost (the edge's buffer full, the message log refusing): why a count differs.
  const dropped = await Promise.all(['visits_dropped_total', 'visit_log_dropped_total'].map(async (name) => `${name} ${await metricSum(base, name)}`));
  console.log(`the platform's own counters: ${dropped.join(', ')}`);

  let passed = true;
  for (const { result, failures, count } of rows) {
    for (const failure of [...failures, ...(count ? countFailures(count) : [])]) {
      passed = false;
      console.log(`FAILED ${result.name}: ${failure}`);
    }
  }
  return passed;
}

let settings: Settings;
try {
  settings = settingsFromEnv();
} catch (error) {
  console.error(`loadtest: ${(error as Error).message}`);
  process.exit(2);
}
console.log(
  `load test ${new Date().toISOString().slice(0, 10)}, node ${process.version}, ${cpus().length} cores: ${settings.seconds} s a scenario, ` +
    `${settings.connections} connections for redirects, ${settings.apiConnections} for the API mix` +
    `${settings.rate ? `, at most ${settings.rate} requests/s a load` : ''}${settings.p99Factor !== 1 ? `, p99 bounds ×${settings.p99Factor}` : ''}; ` +
    `${settings.baseUrl ? `target ${settings.baseUrl}` : 'a platform started here (node dist/services/main.js, embedded stores)'}`,
);
console.log(`before the run: ${await otherLoad()}`);
const platform = await step(settings.baseUrl ? `checking ${settings.baseUrl}` : 'starting the platform', () => startPlatform(settings));
// Ctrl-C or a CI's SIGTERM still stops the platform started here; a crash of this process kills it.
process.once('exit', killAll);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`\n${signal}: stopping the platform`);
    void platform.stop().finally(() => process.exit(130));
  });
}
let passed = false;
try {
  passed = await main(settings, platform);
} catch (error) {
  console.error(`\nload test failed: ${(error as Error).stack ?? String(error)}`);
  const output = platform.output().trim();
  if (output) console.error(`the platform's last lines:\n${output.split('\n').slice(-30).join('\n')}`);
} finally {
  const printed = platform
    .output()
    .split('\n')
    .filter((line) => line.trim() !== '');
  if (printed.length > 0)
    console.log(`the platform printed ${printed.length} line${printed.length === 1 ? '' : 's'} (LOG_LEVEL=warn); the last: ${printed.at(-1)!.slice(0, 500)}`);
  await platform.stop();
}
console.log(passed ? 'load test passed' : 'load test FAILED');
process.exit(passed ? 0 : 1);
