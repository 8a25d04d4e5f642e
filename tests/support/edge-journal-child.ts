// A child process for the edge journal's crash test (services/ingest/journal.int.test.ts), killed with
// SIGKILL by the test while it takes visits:
//   node --import tsx tests/support/edge-journal-child.ts <dir> <journal 1|0>
// takes visits n = 0, 1, 2 … through the edge's producer into a durable log under <dir>/log, 50 an
// iteration of the event loop, printing "taken <n>" once the iteration that took them has ended
// (the journal writes an iteration's visits in its check phase; stdout on a pipe is written
// synchronously on Linux: what the test reads was taken before the kill, in an iteration that ended).
import { join } from 'node:path';
import { createLogger } from '#shared/logger.js';
import { createMetrics } from '#shared/metrics.js';
import { createDurableLog } from '#shared/message-log/lmdb.js';
import type { RawVisit } from '#shared/visits/raw-visit.js';
import { createVisitProducer } from '#services/ingest/visit-producer.js';
import { testConfig } from './context.js';
import { rawVisit } from './visits.js';

const [dir, journal] = process.argv.slice(2);
if (!dir || (journal !== '1' && journal !== '0')) throw new Error('usage: edge-journal-child.ts <dir> <journal 1|0>');
const base = testConfig({ VISIT_JOURNAL: journal });
const config = { ...base, messageLog: { kind: 'lmdb' as const, dir: join(dir, 'log'), commitDelayMs: 50, capacity: 10_000_000, minFreeBytes: 0 } };
const log = createLogger({ logLevel: 'silent' });
const metrics = createMetrics();
const messageLog = createDurableLog(config.messageLog, log, metrics);
const producer = createVisitProducer({ messageLog, config, metrics, log });
for (let n = 0; ;) {
  for (const end = n + 50; n < end; n++) producer.enqueue(rawVisit('crash', { n }) as unknown as RawVisit);
  await new Promise((resolve) => setImmediate(resolve));
  process.stdout.write(`taken ${n - 1}\n`);
}
