import { DelayedError, Queue, Worker, type JobsOptions } from 'bullmq';
import { Redis } from 'ioredis';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { DeferJob, JOB_ID_RETENTION_MS, backoffDelay, type JobDefinition, type Jobs } from './jobs.js';

/** BullMQ jobs on Redis: one queue per job kind, attempts and backoff from the job definition. */
export function createBullmqJobs(url: string, log: Logger, metrics: Metrics, prefix = 'lt'): Jobs {
  // BullMQ workers block on Redis, so they need maxRetriesPerRequest: null.
  const connection = new Redis(url, { maxRetriesPerRequest: null });
  connection.on('error', () => undefined);
  const queues = new Map<string, Queue>();
  const workers = new Set<Worker>();
  // BullMQ does not close a connection it was handed, so the workers' own ones are closed here.
  const workerConnections = new Set<Redis>();
  const queueFor = (name: string) => {
    let queue = queues.get(name);
    if (!queue) {
      queue = new Queue(name, { connection, prefix });
      queue.on('error', (error) => log.warn({ err: error, queue: name }, 'job queue error'));
      queues.set(name, queue);
    }
    return queue;
  };
  const jobOptions = (definition: JobDefinition<unknown>): JobsOptions => ({
    attempts: definition.attempts,
    backoff: { type: 'jittered', delay: definition.backoffMs },
    removeOnComplete: { age: JOB_ID_RETENTION_MS.completed / 1000, count: definition.retainFinished },
    removeOnFail: { age: JOB_ID_RETENTION_MS.failed / 1000, count: definition.retainFinished },
  });
  return {
    kind: 'bullmq',
    async enqueue<Data>(definition: JobDefinition<Data>, data: Data, options: { jobId?: string; delayMs?: number } = {}) {
      await queueFor(definition.name).add(definition.name, data, { ...jobOptions(definition), jobId: options.jobId, delay: options.delayMs });
    },
    async enqueueMany(definition, jobs) {
      if (jobs.length === 0) return;
      const options = jobOptions(definition);
      await queueFor(definition.name).addBulk(jobs.map((job) => ({ name: definition.name, data: job.data, opts: { ...options, jobId: job.jobId } })));
    },
    async process(definition, handler) {
      const workerConnection = connection.duplicate();
      workerConnections.add(workerConnection);
      const worker = new Worker(
        definition.name,
        async (job, token) => {
          const attempt = job.attemptsMade + 1;
          try {
            await handler(job.data as Parameters<typeof handler>[0], { id: job.id ?? '', attempt, final: attempt >= definition.attempts });
          } catch (error) {
            if (!(error instanceof DeferJob)) throw error;
            // Run again later as the same attempt: moved to the delayed set, not failed.
            await job.moveToDelayed(Date.now() + error.delayMs, token);
            throw new DelayedError();
          }
        },
        {
          connection: workerConnection,
          prefix,
          concurrency: definition.concurrency,
          settings: {
            // Same schedule as the one-process runner (lmdb.ts): exponential with jitter.
            backoffStrategy: (attemptsMade: number) => backoffDelay(definition, attemptsMade + 1),
          },
        },
      );
      worker.on('completed', () => metrics.jobsProcessed.inc({ job: definition.name, outcome: 'completed' }));
      worker.on('failed', (job, error) => {
        const final = (job?.attemptsMade ?? 0) >= definition.attempts;
        metrics.jobsProcessed.inc({ job: definition.name, outcome: final ? 'failed' : 'retried' });
        if (final) log.warn({ job: definition.name, id: job?.id, err: error }, 'job failed for good');
      });
      worker.on('error', (error) => log.warn({ err: error, job: definition.name }, 'job worker error'));
      workers.add(worker);
      return {
        async stop() {
          await worker.close();
          workers.delete(worker);
          await workerConnection.quit().catch(() => workerConnection.disconnect());
          workerConnections.delete(workerConnection);
        },
      };
    },
    async repeat(definition, data, everyMs) {
      // The scheduler's id is the kind's name: every process upserts the same one. Its jobs take the
      // kind's attempts and backoff; their ids are the scheduler's own (one job per period).
      const { removeOnComplete, removeOnFail, attempts, backoff } = jobOptions(definition);
      await queueFor(definition.name).upsertJobScheduler(
        definition.name,
        { every: everyMs },
        {
          name: definition.name,
          data,
          opts: { removeOnComplete, removeOnFail, attempts, backoff },
        },
      );
    },
    async stopRepeating(definition) {
      await queueFor(definition.name).removeJobScheduler(definition.name);
    },
    async waiting(definition) {
      return queueFor(definition.name).getWaitingCount();
    },
    async ping() {
      await connection.ping();
    },
    async close() {
      await Promise.all([...workers].map((worker) => worker.close()));
      await Promise.all([...workerConnections].map((client) => client.quit().catch(() => client.disconnect())));
      await Promise.all([...queues.values()].map((queue) => queue.close()));
      await connection.quit().catch(() => connection.disconnect());
    },
  };
}
