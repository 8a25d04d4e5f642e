// `bash bench/run.sh chdb-contention [batches] [pairs]`: does chDB spend more CPU per row when other
// processes share its core? The same visits, encoded beforehand, are inserted as an enricher at
// 3 000 visits/s inserts them (a 2 400-row batch every 800 ms), with chDB's threads and the event
// loop pinned to one core: alone, then with a competitor process on that core busy about half the
// time (as the cluster bench's ingest nodes are), alternating.
import { spawn, spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { enrich } from '#shared/visits/enrichment.js';
import { encodeVisits } from '#shared/visits/visit-rows.js';
import { visitorHash } from '#shared/visits/visitor-hash.js';
import { openGeoLookup } from '#shared/geo.js';
import type { RawVisit } from '#shared/visits/raw-visit.js';
import { runBench } from './lib/context.js';
import { sampleVisit } from './lib/sample-visit.js';
import { threadKinds, threadsOf, threadsPer } from './lib/proc.js';

const BATCH = 2_400;
const BATCHES = Number(process.argv[2] ?? 25);
const PAIRS = Number(process.argv[3] ?? 2);
const PACE_MS = 800;

spawnSync('taskset', ['-a', '-cp', '0', String(process.pid)], { stdio: 'ignore' });

const LINK = { id: '0193a1f2-7c1e-7d3a-9b1e-3f6c2a1d4e60', slug: 'load' };
const visit = (i: number) => JSON.parse(sampleVisit(i, LINK).value) as RawVisit;

/** A process on core 0 busy `busyMs` of every `busyMs + idleMs`. */
function competitor(busyMs: number, idleMs: number) {
  const code = `const spin=()=>{const end=Date.now()+${busyMs};while(Date.now()<end);setTimeout(spin,${idleMs})};spin()`;
  return spawn('taskset', ['-c', '0', process.execPath, '-e', code], { stdio: 'ignore' });
}

await runBench({}, async (context) => {
  const geo = await openGeoLookup();
  let n = 0;
  const phase = async (label: string, withCompetitor: boolean) => {
    const inserts = [];
    for (let b = 0; b < BATCHES; b++) {
      const visits = Array.from({ length: BATCH }, () => visit(n++));
      inserts.push(
        await encodeVisits(visits, (raw) => ({ ...enrich(raw, geo), visitor_hash: visitorHash('bench', raw.ip_public, raw.user_agent), is_unique: 0 })),
      );
    }
    const other = withCompetitor ? competitor(1, 1) : undefined;
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const before = threadsOf(process.pid);
    const start = performance.now();
    for (let b = 0; b < inserts.length; b++) {
      await context.analytics.insertEncoded(inserts[b]!);
      const due = start + (b + 1) * PACE_MS;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
    // The merges the inserts started, as the cluster bench's span runs until the rows are stored and a little after.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const threads = threadsPer(before, threadsOf(process.pid), BATCH * BATCHES);
    other?.kill();
    const kinds = threadKinds(threads);
    console.log(
      `${label}: ClickHouse ${kinds.ClickHouse.toFixed(1)} µs a row (${threads
        .filter(([name]) => !name.startsWith('event loop') && name !== 'node helpers')
        .map(([name, us]) => `${name} ${us.toFixed(1)}`)
        .join(', ')}); event loop ${kinds['event loop'].toFixed(1)}`,
    );
  };
  await phase('warm-up (alone)', false);
  for (let pair = 0; pair < PAIRS; pair++) {
    await phase(`pair ${pair + 1}, alone`, false);
    await phase(`pair ${pair + 1}, a competitor on the core half the time`, true);
  }
});
