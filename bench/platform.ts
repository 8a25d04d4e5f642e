// The whole platform as `make run` starts it — one process, every role, embedded stores — loaded from
// outside: what a stored visit costs in server CPU, end to end (redirect, publish, enrich, store).
//   bash bench/run.sh platform [seconds] [connections] [rate]
// With KAFKA_BROKERS (and DATABASE_URL, REDIS_URL) in the environment (`source .services/env`), a
// second run does the same on those services: the message log on Kafka, chDB still in the process.
//
// Each run starts `node dist-bench/services/main.js` on a fresh DATA_DIR, seeds an owner, a
// subdomain and a link through the API, stops it and starts it again on that data (the measured
// process: a platform restarted on its data, as every one but the first start is), warms up, then autocannon (a separate process) sends
// redirects for `seconds` with a browser's user agent. The server's CPU time (user + system of its
// every thread, from /proc) is read from the load's start until every answered redirect is counted
// in the owner's report (rows and rollups): CPU per stored visit is that over the visits stored.
// Peak RSS is the kernel's high-water mark of the process (VmHWM), over its whole life. Each start's
// time to healthy and its resident memory 20 s later (idle, before any load) are printed too.
// Targets (issues 25, 37): ≤ 40 µs of server CPU per stored visit, ≤ 600 MB peak RSS, redirect p99 ≤ 10 ms,
// ≤ 300 MB idle, a first start ≤ 10 s and a restart ≤ 3 s.
// The baseline (issue 37): in the same run, a bare Fastify app answering a fixed 302 (lib/bare-app.ts),
// started as the platform is and loaded with the same seconds, connections and rate, on the same
// cores; its server CPU per request is printed, and each mode's CPU per stored visit as a ratio of
// it (target ≤ 2.5×). BASELINE=0 leaves it out.
// PROFILE=1 adds --cpu-prof: the server writes a .cpuprofile into bench-profiles/ when it stops.
import { otherLoad, pad } from './lib/load.js';
import { measureBare, measurePlatform, type BareFigures, type Figures } from './lib/platform-run.js';

const seconds = Number(process.argv[2] ?? 20);
const connections = Number(process.argv[3] ?? 50);
/** Redirects per second offered (0: as many as the platform answers), for comparing builds at one load. */
const rate = Number(process.argv[4] ?? 0);
if (!Number.isInteger(seconds) || seconds < 1 || !Number.isInteger(connections) || connections < 1 || !Number.isInteger(rate) || rate < 0) {
  console.error('usage: bash bench/run.sh platform [seconds ≥ 1] [connections ≥ 1] [redirects/s, 0: as fast as answered]');
  process.exit(1);
}
const TARGETS = { cpuUs: 40, rssMb: 600, p99Ms: 10, idleMb: 300, bareRatio: 2.5 };

console.log(
  `node ${process.version}; ${seconds} s of redirects from ${connections} connections (autocannon, its own process), ${rate > 0 ? `${rate}/s offered` : 'as fast as answered'}, browser user agent`,
);
console.log(`before the runs: ${await otherLoad()}`);
const modes: ('embedded' | 'services')[] = process.env.KAFKA_BROKERS ? ['embedded', 'services'] : ['embedded'];
const results: Figures[] = [];
let failed = false;
for (const mode of modes) {
  try {
    results.push(await measurePlatform(mode, { seconds, connections, rate }));
  } catch (error) {
    failed = true;
    console.error(`benchmark failed: ${(error as Error).message}`);
  }
}
let bare: BareFigures | undefined;
if (process.env.BASELINE !== '0') {
  try {
    bare = await measureBare({ seconds, connections, rate });
  } catch (error) {
    failed = true;
    console.error(`benchmark failed: ${(error as Error).message}`);
  }
}
console.log(`after the runs: ${await otherLoad()}`);
console.log(
  `\n${'mode'.padEnd(10)}${pad('visits', 9)}${pad('redirects/s', 13)}${pad('p50 ms', 8)}${pad('p99 ms', 8)}${pad('drain s', 9)}${pad('CPU µs/visit', 14)}${pad('peak RSS MB', 13)}`,
);
for (const r of results) {
  console.log(
    `${r.mode.padEnd(10)}${pad(String(r.answered), 9)}${pad(r.rps.toFixed(0), 13)}${pad(String(r.p50), 8)}${pad(String(r.p99), 8)}${pad(r.drainS.toFixed(1), 9)}${pad(r.cpuUs.toFixed(1), 14)}${pad(r.peakRssMb.toFixed(0), 13)}`,
  );
}
for (const r of results)
  console.log(
    `${r.mode}: start to healthy ${r.startS.first.toFixed(1)} s on an empty DATA_DIR (target ≤ 10), ${r.startS.restart.toFixed(1)} s restarted (≤ 3); idle RSS 20 s after it ${r.idleMb.first.toFixed(0)} MB and ${r.idleMb.restart.toFixed(0)} MB (≤ ${TARGETS.idleMb})`,
  );
for (const r of results) console.log(`${r.mode}: ${r.inserts} inserts into visits, ${r.rowsPerInsert.toFixed(0)} rows each`);
for (const r of results)
  console.log(
    `${r.mode}: memory at the load's end: ${r.memory.rssMb.toFixed(0)} MB resident, of which V8's heap ${r.memory.heapMb.toFixed(0)} MB and buffers ${r.memory.externalMb.toFixed(0)} MB`,
  );
for (const r of results) console.log(`${r.mode}: CPU µs per visit by thread: ${r.threads.map(([name, us]) => `${name} ${us.toFixed(1)}`).join(', ')}`);
for (const r of results) {
  const verdict = (ok: boolean) => (ok ? 'within target' : 'BELOW target');
  console.log(
    `${r.mode}: CPU ${r.cpuUs.toFixed(1)} µs/visit (target ≤ ${TARGETS.cpuUs}): ${verdict(r.cpuUs <= TARGETS.cpuUs)}; peak RSS ${r.peakRssMb.toFixed(0)} MB (≤ ${TARGETS.rssMb}): ${verdict(r.peakRssMb <= TARGETS.rssMb)}; p99 ${r.p99} ms (≤ ${TARGETS.p99Ms}): ${verdict(r.p99 <= TARGETS.p99Ms)}`,
  );
}
if (bare) {
  console.log(
    `bare Fastify 302 (same seconds, connections, rate and cores): ${bare.answered} requests, ${bare.rps.toFixed(0)}/s, p50 ${bare.p50} ms, p99 ${bare.p99} ms, CPU ${bare.cpuUs.toFixed(1)} µs/request`,
  );
  for (const r of results) {
    const ratio = r.cpuUs / bare.cpuUs;
    console.log(
      `${r.mode}: CPU per stored visit ${r.cpuUs.toFixed(1)} µs = ${ratio.toFixed(2)}× the bare app's ${bare.cpuUs.toFixed(1)} µs per request (target ≤ ${TARGETS.bareRatio}×): ${ratio <= TARGETS.bareRatio ? 'within target' : 'ABOVE target'}`,
    );
  }
}
process.exit(failed ? 1 : 0);
