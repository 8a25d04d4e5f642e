// What the edge journal (services/ingest/journal.ts, VISIT_JOURNAL) costs the edge's core per
// visit: the edge's producer taking visits into the durable one-process log (50 ms group commit),
// 200 a turn of the event loop as on a loaded edge, with and without the journal, alternating, in
// one process. CPU µs per visit (user + system, the log's writer thread included), the median of
// each over the rounds.
//   bash bench/run.sh edge-journal [rounds]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '#shared/logger.js';
import { createMetrics } from '#shared/metrics.js';
import { createDurableLog } from '#shared/message-log/lmdb.js';
import type { RawVisit } from '#shared/visits/raw-visit.js';
import { createVisitProducer } from '#services/ingest/visit-producer.js';
import { testConfig } from '#tests/support/context.js';
import { rawVisit } from '#tests/support/visits.js';
const log = createLogger({ logLevel: 'silent' });
async function run(journal: '1' | '0', n: number) {
  const dir = mkdtempSync(join(tmpdir(), 'jcost-'));
  const config = {
    ...testConfig({ VISIT_JOURNAL: journal }),
    messageLog: { kind: 'lmdb' as const, dir: join(dir, 'log'), commitDelayMs: 50, capacity: 100_000_000, minFreeBytes: 0 },
  };
  const metrics = createMetrics();
  const messageLog = createDurableLog(config.messageLog, log, metrics);
  const producer = createVisitProducer({ messageLog, config, metrics, log });
  const visits = Array.from({ length: 200 }, (_, i) => rawVisit('cost', { i }) as unknown as RawVisit);
  const cpu = process.cpuUsage();
  // 200 visits a turn (a loaded edge's turn), the turn yielded as a server's would be.
  for (let done = 0; done < n; done += 200) {
    for (const visit of visits) producer.enqueue(visit);
    await new Promise((resolve) => setImmediate(resolve));
  }
  while (producer.buffered() > 0) await new Promise((resolve) => setTimeout(resolve, 5));
  const used = process.cpuUsage(cpu);
  await producer.close(1000);
  await messageLog.close();
  rmSync(dir, { recursive: true, force: true });
  return (used.user + used.system) / n;
}
const results: Record<string, number[]> = { '0': [], '1': [] };
const rounds = Number(process.argv[2] ?? 6);
for (let round = 0; round < rounds; round++) for (const j of round % 2 ? (['1', '0'] as const) : (['0', '1'] as const)) results[j]!.push(await run(j, 200_000));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(
  `CPU µs per visit taken, each round: without the journal ${results['0']!.map((x) => x.toFixed(2)).join(' ')}; with it ${results['1']!.map((x) => x.toFixed(2)).join(' ')}`,
);
console.log(
  `median: without ${median(results['0']!).toFixed(2)} µs, with ${median(results['1']!).toFixed(2)} µs: the journal costs ${(median(results['1']!) - median(results['0']!)).toFixed(2)} µs a visit`,
);
process.exit(0);
