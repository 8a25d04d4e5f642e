/**
 * The worker role: starts a processor for every job kind it is given (BullMQ workers, or the
 * in-process runner). Job kinds are added by the issues that need them (webhook delivery first).
 */
export async function startWorker(context, jobs) {
    for (const job of jobs)
        await context.jobs.process(job.definition, job.handler(context));
}
//# sourceMappingURL=worker.js.map