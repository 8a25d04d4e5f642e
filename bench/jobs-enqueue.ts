// What the durable embedded job runner (LMDB, shared/jobs/lmdb.ts) costs, with webhook-delivery-sized jobs
// (the in-memory runner it replaced measured p50 4 µs, p99 30–69 µs, 1–2 µs per job in batches, on 2026-11-25):
//   bash bench/run.sh jobs-enqueue [jobs]          (default 20 000)
// - durable latency: one `await enqueue` at a time (commit and fsync each): p50, p99 and mean;
// - enqueueMany in batches of 500 (the webhook dispatcher's batch): µs per job, wall and main-thread CPU;
// - `jobs` enqueues at once (Promise.all): µs per job;
// - a full cycle (enqueueMany, then run with a no-op handler until all finished): jobs per second.
// The folder is under the OS temp dir (BENCH_DIR to choose another disk).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { createLogger } from '#shared/logger.js';
import { createMetrics } from '#shared/metrics.js';
import { defineJob, type Jobs } from '#shared/jobs/jobs.js';
import { createLmdbJobs } from '#shared/jobs/lmdb.js';

const total = Number(process.argv[2] ?? 20_000);
const BATCH = 500;
const root = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), 'linktrack-bench-jobs-'));
const log = createLogger({ logLevel: 'silent' });

/** A job the size of a visit.new delivery (about 600 bytes of JSON). */
function delivery() {
  const id = randomUUID();
  return {
    webhook_id: randomUUID(),
    owner_id: randomUUID(),
    delivery_id: id,
    event: {
      id: randomUUID(),
      type: 'visit.new',
      occurred_at: new Date().toISOString(),
      subdomain: 'shop',
      data: {
        link_id: randomUUID(),
        slug: 'spring-sale',
        url: 'https://example.com/spring?utm_source=newsletter',
        country: 'DE',
        device: 'mobile',
        browser: 'Firefox',
        os: 'Android',
        referrer: 'https://news.example.org/',
        bot: false,
      },
    },
  };
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

async function measure(label: string, open: (dir: string) => Jobs) {
  let run = 0;
  const fresh = () => open(join(root, `${label}-${run++}`));
  const job = defineJob<ReturnType<typeof delivery>>({ name: 'webhook.deliver', attempts: 5, backoffMs: 60_000, concurrency: 64, retainFinished: 100_000 });

  // Durable latency, one at a time.
  let jobs = fresh();
  const latencies: number[] = [];
  const sequential = Math.min(total, 2_000);
  for (let n = 0; n < sequential; n++) {
    const started = performance.now();
    await jobs.enqueue(job, delivery(), { jobId: `seq-${n}` });
    latencies.push((performance.now() - started) * 1000);
  }
  await jobs.close();
  latencies.sort((a, b) => a - b);
  const mean = latencies.reduce((sum, value) => sum + value, 0) / latencies.length;

  // Batches of 500, as the dispatcher enqueues.
  jobs = fresh();
  const payloads = Array.from({ length: total }, (_, n) => ({ data: delivery(), jobId: `batch-${n}` }));
  let cpu = process.cpuUsage();
  let started = performance.now();
  for (let offset = 0; offset < total; offset += BATCH) await jobs.enqueueMany(job, payloads.slice(offset, offset + BATCH));
  const batchWall = ((performance.now() - started) * 1000) / total;
  cpu = process.cpuUsage(cpu);
  const batchCpu = (cpu.user + cpu.system) / total;

  // Full cycle on the same runner: the jobs just enqueued run with a no-op handler.
  let done = 0;
  started = performance.now();
  const finished = new Promise<void>((resolve) => {
    void jobs.process(job, async () => {
      if (++done === total) resolve();
    });
  });
  await finished;
  await jobs.close(); // includes the finishes' last writes
  const cycle = total / ((performance.now() - started) / 1000);

  // All at once.
  jobs = fresh();
  const concurrent = Array.from({ length: total }, (_, n) => ({ data: delivery(), jobId: `all-${n}` }));
  started = performance.now();
  await Promise.all(concurrent.map(({ data, jobId }) => jobs.enqueue(job, data, { jobId })));
  const allWall = ((performance.now() - started) * 1000) / total;
  await jobs.close();

  console.log(
    `${label.padEnd(6)} one at a time: p50 ${percentile(latencies, 50).toFixed(0)} µs, p99 ${percentile(latencies, 99).toFixed(0)} µs, mean ${mean.toFixed(0)} µs` +
      ` | batches of ${BATCH}: ${batchWall.toFixed(1)} µs/job wall, ${batchCpu.toFixed(1)} µs/job CPU` +
      ` | ${total} at once: ${allWall.toFixed(1)} µs/job | enqueue+run+finish: ${Math.round(cycle)} jobs/s`,
  );
}

try {
  console.log(`jobs: ${total}, folder: ${root}`);
  await measure('lmdb', (dir) => createLmdbJobs(log, createMetrics(), { dir }));
} finally {
  rmSync(root, { recursive: true, force: true });
}
