const noop = () => undefined;
/**
 * A batch handler for a visit-log consumer with `concurrency` above 1: while one batch is being
 * stored, the next is prepared; what follows the store keeps the batches' order, and so do the
 * outcomes (a batch settles only after the batch handed over before it).
 *
 * A batch handed over while the batch before it was still in hand fails if that one failed: the
 * in-process log redelivers the failed batch and the ones after it, so finishing it would do its
 * work twice, and ahead of its predecessor (on Kafka the two come from different partitions, and
 * the second is then redelivered needlessly, which its deduplicated insert and stable event ids
 * make harmless). Once no batch is in hand (the in-process log waits for that before it
 * redelivers), the next batch starts afresh.
 */
export function orderedStages(stages) {
    let prepared = Promise.resolve();
    /** The outcome of the batch handed over last. */
    let last = Promise.resolve();
    /** Batches handed over and not settled. */
    let inHand = 0;
    return (input) => {
        // Every place in line is taken now, synchronously: the order is the order of the calls.
        const previous = inHand > 0 ? last : Promise.resolve();
        inHand++;
        const ready = prepared.then(() => stages.prepare(input));
        prepared = ready.then(noop, noop);
        const stored = ready.then(async (batch) => {
            await stages.store(batch);
            return batch;
        });
        const outcome = Promise.allSettled([stored, previous])
            .then(async ([own, before]) => {
            if (before.status === 'rejected')
                throw new Error('an earlier batch failed: this one is redelivered after it');
            if (own.status === 'rejected')
                throw own.reason;
            await stages.finish(own.value);
        })
            .catch((error) => {
            stages.failed?.(error);
            throw error;
        });
        last = outcome;
        const settle = () => void inHand--;
        outcome.then(settle, settle);
        return outcome;
    };
}
//# sourceMappingURL=stages.js.map