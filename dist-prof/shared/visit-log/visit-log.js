/** Bookkeeping every implementation keeps per consumer. */
export function consumerTracker(group, topic) {
    const status = { group, topic, running: true, lag: null, last_batch_at: null, last_error: null };
    return {
        status,
        /** The handler, recording each batch's success or failure (a failure is rethrown: the batch is redelivered). */
        track(handler) {
            return async (messages) => {
                try {
                    await handler(messages);
                }
                catch (error) {
                    status.last_error = (error instanceof Error ? error.message : String(error)).slice(0, 300);
                    throw error;
                }
                status.last_batch_at = new Date().toISOString();
                status.last_error = null;
            };
        },
    };
}
/** Thrown when the in-process log is full: the caller counts it, never drops silently. */
export class VisitLogFullError extends Error {
    constructor(topic, capacity) {
        super(`visit log topic ${topic} is full (${capacity} messages waiting)`);
        this.name = 'VisitLogFullError';
    }
}
//# sourceMappingURL=visit-log.js.map