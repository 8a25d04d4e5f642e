import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { JOB_ID_RETENTION_MS, backoffDelay } from './jobs.js';
/** BullMQ jobs on Redis: one queue per job kind, attempts and backoff from the job definition. */
export function createBullmqJobs(url, log, metrics) {
    // BullMQ workers block on Redis, so they need maxRetriesPerRequest: null.
    const connection = new Redis(url, { maxRetriesPerRequest: null });
    connection.on('error', () => undefined);
    const queues = new Map();
    const workers = new Set();
    // BullMQ does not close a connection it was handed, so the workers' own ones are closed here.
    const workerConnections = new Set();
    const queueFor = (name) => {
        let queue = queues.get(name);
        if (!queue) {
            queue = new Queue(name, { connection, prefix: 'lt' });
            queue.on('error', (error) => log.warn({ err: error, queue: name }, 'job queue error'));
            queues.set(name, queue);
        }
        return queue;
    };
    return {
        kind: 'bullmq',
        async enqueue(definition, data, options = {}) {
            await queueFor(definition.name).add(definition.name, data, {
                jobId: options.jobId,
                delay: options.delayMs,
                attempts: definition.attempts,
                backoff: { type: 'jittered', delay: definition.backoffMs },
                removeOnComplete: { age: JOB_ID_RETENTION_MS.completed / 1000 },
                removeOnFail: { age: JOB_ID_RETENTION_MS.failed / 1000 },
            });
        },
        async process(definition, handler) {
            const workerConnection = connection.duplicate();
            workerConnections.add(workerConnection);
            const worker = new Worker(definition.name, async (job) => {
                const attempt = job.attemptsMade + 1;
                await handler(job.data, { id: job.id ?? '', attempt, final: attempt >= definition.attempts });
            }, {
                connection: workerConnection,
                prefix: 'lt',
                concurrency: definition.concurrency,
                settings: {
                    // Same schedule as the in-process runner: exponential with jitter.
                    backoffStrategy: (attemptsMade) => backoffDelay(definition, attemptsMade + 1),
                },
            });
            worker.on('completed', () => metrics.jobsProcessed.inc({ job: definition.name, outcome: 'completed' }));
            worker.on('failed', (job, error) => {
                const final = (job?.attemptsMade ?? 0) >= definition.attempts;
                metrics.jobsProcessed.inc({ job: definition.name, outcome: final ? 'failed' : 'retried' });
                if (final)
                    log.warn({ job: definition.name, id: job?.id, err: error }, 'job failed for good');
            });
            worker.on('error', (error) => log.warn({ err: error, job: definition.name }, 'job worker error'));
            workers.add(worker);
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
//# sourceMappingURL=bullmq.js.map