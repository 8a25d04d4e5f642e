/** Declares a job kind. */
export function defineJob(definition) {
    return definition;
}
/**
 * How long a finished job's id keeps deduplicating enqueues, on both backends (BullMQ keeps the job
 * record that long; the in-process runner keeps the id).
 */
export const JOB_ID_RETENTION_MS = { completed: 3_600_000, failed: 7 * 24 * 3_600_000 };
/** Delay before attempt `next` (2 for the first retry): exponential with ±20 % jitter. */
export function backoffDelay(definition, next) {
    const base = definition.backoffMs * 2 ** (next - 2);
    return Math.round(base * (0.8 + Math.random() * 0.4));
}
//# sourceMappingURL=jobs.js.map