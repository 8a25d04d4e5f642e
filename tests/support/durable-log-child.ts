// A child process for the durable message log's crash tests (shared/message-log/message-log.int.test.ts),
// killed with SIGKILL by the test at a point of its choosing:
//   node --import tsx tests/support/durable-log-child.ts publish <dir>   publishes message n = 0, 1, 2 … one per call,
//                                                                         printing "published <n>" once each publish resolved
//   node --import tsx tests/support/durable-log-child.ts consume <dir>   consumes visits.raw in batches of 5, printing
//                                                                         "batch <first> <last> <redelivered>"; the third batch never finishes
import { createLogger } from '#shared/logger.js';
import { createMetrics } from '#shared/metrics.js';
import { createDurableLog } from '#shared/message-log/lmdb.js';
import { TOPICS } from '#shared/message-log/topics.js';

const [mode, dir] = process.argv.slice(2);
if ((mode !== 'publish' && mode !== 'consume') || !dir) throw new Error('usage: durable-log-child.ts publish|consume <dir>');
const log = createDurableLog({ dir, commitDelayMs: 2 }, createLogger({ logLevel: 'silent' }), createMetrics());
if (mode === 'publish') {
  for (let n = 0; ; n++) {
    await log.publish(TOPICS.visitsRaw, [{ key: 'k', value: String(n) }]);
    process.stdout.write(`published ${n}\n`);
  }
} else {
  let batches = 0;
  await log.consume({
    groupId: 'crash',
    topic: TOPICS.visitsRaw,
    maxBatch: 5,
    concurrency: 2,
    handler: async (messages, control) => {
      process.stdout.write(`batch ${messages[0]!.value} ${messages[messages.length - 1]!.value} ${control.redelivered}\n`);
      if (++batches >= 3) await new Promise(() => undefined);
    },
  });
}
