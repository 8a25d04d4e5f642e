/**
 * A process for the crash tests of the LMDB job runner (lmdb.int.test.ts), which kill it with SIGKILL:
 *   node --import tsx shared/jobs/lmdb.child.ts <dir> enqueue <count>  enqueues `count` jobs (ids crash-0…),
 *     prints "enqueued" once every enqueue has resolved, then idles;
 *   node --import tsx shared/jobs/lmdb.child.ts <dir> hang             processes the kind with a handler
 *     that prints "started <id> <attempt>" and never returns, and enqueues job crash-0 (ignored when known).
 */
import { pathToFileURL } from 'node:url';
import { createLogger } from '../logger.js';
import { createMetrics } from '../metrics.js';
import { defineJob } from './jobs.js';
import { createLmdbJobs } from './lmdb.js';

/** The job kind of the crash tests, shared by the test and this process. */
export const CRASH_JOB = defineJob<{ n: number }>({ name: 'crash-test', attempts: 3, backoffMs: 50, concurrency: 4 });

async function main([dir, mode, count]: string[]): Promise<void> {
  if (!dir || (mode !== 'enqueue' && mode !== 'hang')) throw new Error('usage: lmdb.child.ts <dir> enqueue <count> | hang');
  const jobs = createLmdbJobs(createLogger({ logLevel: 'silent' }), createMetrics(), { dir });
  if (mode === 'enqueue') {
    await Promise.all(Array.from({ length: Number(count) }, (_, n) => jobs.enqueue(CRASH_JOB, { n }, { jobId: `crash-${n}` })));
    process.stdout.write('enqueued\n');
  } else {
    await jobs.process(CRASH_JOB, async (_data, { id, attempt }) => {
      process.stdout.write(`started ${id} ${attempt}\n`);
      await new Promise(() => undefined);
    });
    await jobs.enqueue(CRASH_JOB, { n: 0 }, { jobId: 'crash-0' });
  }
  // Alive until the test kills it.
  setInterval(() => undefined, 60_000);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main(process.argv.slice(2));
