/** The three steps of a batch: prepare (CPU), store (I/O that may overlap), finish (after the store). */
export interface Stages<T, P> {
  /** One batch at a time, in arrival order. */
  prepare(input: T): Promise<P>;
  /** Overlaps the next batch's prepare (ClickHouse works on its own threads meanwhile). */
  store(prepared: P): Promise<void>;
  /** One batch at a time, in arrival order, once the batch is stored and the batch before it finished. */
  finish(prepared: P): Promise<void>;
  /** Called once for each batch that failed, before its promise rejects. */
  failed?(error: unknown): void;
}

/**
 * A batch handler for a visit-log consumer with `concurrency` above 1: while one batch is being
 * stored, the next is prepared; what follows the store keeps the batches' order.
 *
 * When a batch fails, the visit log redelivers it (and, in-process, the batches after it). A batch
 * handed over before that failure and not finished yet fails too, rather than finishing out of
 * order ahead of its redelivered predecessor; batches handed over after the failure (the
 * redelivery) run normally.
 */
export function orderedStages<T, P>(stages: Stages<T, P>): (input: T) => Promise<void> {
  let prepared: Promise<unknown> = Promise.resolve();
  let finished: Promise<unknown> = Promise.resolve();
  /** Batches failed so far: a batch finishes only if none failed since it was handed over. */
  let failures = 0;
  return (input) => {
    const handedAfter = failures;
    // Both places in line are taken now, synchronously: the order is the order of the calls.
    const ready = prepared.then(() => stages.prepare(input));
    const stored = ready.then(async (batch) => {
      await stages.store(batch);
      return batch;
    });
    const done = Promise.all([stored, finished]).then(([batch]) => {
      if (failures !== handedAfter) throw new Error('an earlier batch failed: this one is redelivered after it');
      return stages.finish(batch);
    });
    const outcome = done.catch((error: unknown) => {
      failures++;
      stages.failed?.(error);
      throw error;
    });
    prepared = ready.catch(() => undefined);
    // The next batch finishes after this one's outcome, failure counted.
    finished = outcome.catch(() => undefined);
    return outcome;
  };
}
