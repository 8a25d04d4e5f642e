import type { Context } from '../../shared/context.js';
import type { JobDefinition, JobHandler } from '../../shared/jobs/jobs.js';

/** A job kind with the handler the worker role runs for it. */
export interface WorkerJob<Data> {
  definition: JobDefinition<Data>;
  handler: (context: Context) => JobHandler<Data>;
}

/**
 * The worker role: starts a processor for every job kind it is given (BullMQ workers, or the
 * in-process runner). Job kinds are added by the issues that need them (webhook delivery first).
 */
export async function startWorker(context: Context, jobs: WorkerJob<never>[]): Promise<void> {
  for (const job of jobs) await context.jobs.process(job.definition, job.handler(context));
}
