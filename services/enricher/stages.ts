/** The three steps of a batch: prepare (CPU), store (I/O that may overlap), finish (after the store). */
export interface Stages<T, P> {
  /** One batch at a time, in arrival order. */
  prepare(input: T): Promise<P>;
  /** Overlaps the next batch's prepare (ClickHouse works on its own threads meanwhile). */
  store(prepared: P): Promise<void>;
  /** One batch at a time, in arrival order, once the batch is stored and the batch before it finished. */
  finish(prepared: P): Promise<void>;
  /**
   * Called when a batch's own stages failed (and the batch before it did not), in the batch's place
   * in line: the batch handed over after it finishes only once this settled. `alone` runs the
   * stages of another input (a part of the batch) one after the other, its prepare in line with the
   * others', and rejects with a StageFailure. Resolving means the batch is handled; rejecting fails
   * it (reject with the failure's own error to fail it as if there were no recover).
   */
  recover?(input: T, failure: StageFailure, alone: (input: T) => Promise<void>): Promise<void>;
  /** Called once for each batch that failed, before its promise rejects. */
  failed?(error: unknown): void;
}

/** An error of one stage of a batch, naming the stage (what a dead letter of a poison message says). */
export class StageFailure extends Error {
  constructor(
    readonly stage: string,
    readonly error: unknown,
  ) {
    super(`${stage}: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`, { cause: error });
    this.name = 'StageFailure';
  }
}

/** Rethrows an error as the failure of `stage` (one that already names its stage is kept). */
export const failedIn =
  (stage: string) =>
  (error: unknown): never => {
    throw error instanceof StageFailure ? error : new StageFailure(stage, error);
  };

/** The error a stage threw (what a batch that failed rejects with). */
export const stageError = (error: unknown): unknown => (error instanceof StageFailure ? error.error : error);

const noop = () => undefined;

/**
 * A batch handler for a message-log consumer with `concurrency` above 1: while one batch is being
 * stored, the next is prepared; what follows the store keeps the batches' order, and so do the
 * outcomes (a batch settles only after the batch handed over before it).
 *
 * A batch handed over while the batch before it was still in hand fails if that one failed: the
 * in-process log redelivers the failed batch and the ones after it, so finishing it would do its
 * work twice, and ahead of its predecessor (on Kafka the two come from different partitions, and
 * the second is then redelivered needlessly, which its deduplicated insert and stable event ids
 * make harmless). Once no batch is in hand (the in-process log waits for that before it
 * redelivers), the next batch starts afresh. A batch whose own stages failed may be recovered
 * (`recover`, e.g. a poison message isolated) before that rule applies.
 */
export function orderedStages<T, P>(stages: Stages<T, P>): (input: T) => Promise<void> {
  let prepared: Promise<unknown> = Promise.resolve();
  /** The outcome of the batch handed over last. */
  let last: Promise<void> = Promise.resolve();
  /** Batches handed over and not settled. */
  let inHand = 0;
  /** Prepares an input in line with the others, then stores it; a failure names its stage. */
  const prepareAndStore = (input: T): Promise<P> => {
    const ready = prepared.then(() => stages.prepare(input)).catch(failedIn('prepare'));
    prepared = ready.then(noop, noop);
    return ready.then(async (batch) => {
      await stages.store(batch).catch(failedIn('store'));
      return batch;
    });
  };
  const finish = (batch: P) => stages.finish(batch).catch(failedIn('finish'));
  const alone = async (input: T) => finish(await prepareAndStore(input));
  return (input) => {
    // Every place in line is taken now, synchronously: the order is the order of the calls.
    const previous = inHand > 0 ? last : Promise.resolve();
    inHand++;
    const stored = prepareAndStore(input);
    const outcome = Promise.allSettled([stored, previous])
      .then(async ([own, before]) => {
        if (before.status === 'rejected') throw new Error('an earlier batch failed: this one is redelivered after it');
        try {
          if (own.status === 'rejected') throw own.reason;
          await finish(own.value);
        } catch (failure) {
          if (!stages.recover) throw failure;
          await stages.recover(input, failure as StageFailure, alone);
        }
      })
      .catch((error: unknown) => {
        const thrown = stageError(error);
        stages.failed?.(thrown);
        throw thrown;
      });
    last = outcome;
    const settle = () => void inHand--;
    outcome.then(settle, settle);
    return outcome;
  };
}
