import { describe, expect, it } from 'vitest';
import { orderedStages, type StageFailure } from './stages.js';

/** A promise with its resolve and reject, to play a step that ends when the test says. */
function gate() {
  let open!: () => void;
  let fail!: (error: Error) => void;
  const promise = new Promise<void>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { promise, open, fail };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('orderedStages', () => {
  it('prepares the next batch while one is stored, and finishes in arrival order', async () => {
    const log: string[] = [];
    const stores = new Map([1, 2, 3].map((n) => [n, gate()]));
    const handle = orderedStages<number, number>({
      prepare: async (n) => (log.push(`prepare ${n}`), n),
      store: async (n) => (log.push(`store ${n}`), stores.get(n)!.promise),
      finish: async (n) => void log.push(`finish ${n}`),
    });
    const done = [1, 2, 3].map(handle);
    await tick();
    expect(log).toEqual(['prepare 1', 'store 1', 'prepare 2', 'store 2', 'prepare 3', 'store 3']);
    // The third store ends first, then the second: nothing finishes before the first.
    stores.get(3)!.open();
    stores.get(2)!.open();
    await tick();
    expect(log.filter((entry) => entry.startsWith('finish'))).toEqual([]);
    stores.get(1)!.open();
    await Promise.all(done);
    expect(log.slice(6)).toEqual(['finish 1', 'finish 2', 'finish 3']);
  });

  it('prepares one batch at a time', async () => {
    let preparing = 0;
    let most = 0;
    const handle = orderedStages<number, number>({
      prepare: async (n) => {
        most = Math.max(most, ++preparing);
        await tick();
        preparing--;
        return n;
      },
      store: async () => undefined,
      finish: async () => undefined,
    });
    await Promise.all([1, 2, 3, 4].map(handle));
    expect(most).toBe(1);
  });

  it('fails the batches handed over before a failure, and runs those handed over after it', async () => {
    const finished: number[] = [];
    const failures: unknown[] = [];
    const first = gate();
    const handle = orderedStages<number, number>({
      prepare: async (n) => n,
      // The first store of batch 1 waits for the gate; its redelivery is stored at once.
      store: async (n) => (n === 1 && failures.length === 0 ? first.promise : undefined),
      finish: async (n) => void finished.push(n),
      failed: (error) => void failures.push(error),
    });
    const one = handle(1);
    const two = handle(2);
    await tick();
    first.fail(new Error('insert refused'));
    const [oneOutcome, twoOutcome] = await Promise.allSettled([one, two]);
    expect(oneOutcome).toMatchObject({ status: 'rejected', reason: { message: 'insert refused' } });
    expect(twoOutcome).toMatchObject({ status: 'rejected', reason: { message: expect.stringContaining('an earlier batch failed') } });
    expect(finished).toEqual([]);
    expect(failures).toHaveLength(2);
    // The redelivery: handed over after the failure, both go through.
    await Promise.all([handle(1), handle(2)]);
    expect(finished).toEqual([1, 2]);
  });

  it('a failed prepare or finish fails that batch only when nothing else was in flight', async () => {
    const handle = orderedStages<number, number>({
      prepare: async (n) => {
        if (n === 0) throw new Error('cannot prepare');
        return n;
      },
      store: async () => undefined,
      finish: async (n) => {
        if (n === 9) throw new Error('cannot finish');
      },
    });
    await expect(handle(0)).rejects.toThrow('cannot prepare');
    await expect(handle(9)).rejects.toThrow('cannot finish');
    await expect(handle(5)).resolves.toBeUndefined();
  });

  it('recovers a batch whose own stage failed in its place in line: the batch after it waits, then finishes', async () => {
    const log: string[] = [];
    const failures: StageFailure[] = [];
    const handle = orderedStages<number[], number[]>({
      prepare: async (batch) => batch,
      store: async (batch) => {
        if (batch.includes(13)) throw new TypeError('cannot store 13');
      },
      finish: async (batch) => void log.push(`finish ${batch.join(',')}`),
      async recover(batch, failure, alone) {
        failures.push(failure);
        for (const message of batch) await alone([message]).catch((error: StageFailure) => void log.push(`poison ${message} in ${error.stage}`));
      },
    });
    await Promise.all([handle([12, 13, 14]), handle([15])]);
    expect(log).toEqual(['finish 12', 'poison 13 in store', 'finish 14', 'finish 15']);
    expect(failures).toMatchObject([{ stage: 'store', error: { message: 'cannot store 13' } }]);
  });

  it('names the stage that failed: prepare, store or finish', async () => {
    const stages: string[] = [];
    const handle = orderedStages<string, string>({
      prepare: async (step) => {
        if (step === 'prepare') throw new RangeError(step);
        return step;
      },
      store: async (step) => {
        if (step === 'store') throw new RangeError(step);
      },
      finish: async (step) => {
        if (step === 'finish') throw new RangeError(step);
      },
      recover: async (_step, failure) => void stages.push(failure.stage),
    });
    for (const step of ['prepare', 'store', 'finish']) await handle(step);
    expect(stages).toEqual(['prepare', 'store', 'finish']);
  });

  it("fails a batch whose recover rejects with the stage's own error, and the batch after it as before", async () => {
    const failures: unknown[] = [];
    const refused = new Error('connect ECONNREFUSED');
    const handle = orderedStages<number, number>({
      prepare: async (n) => n,
      store: async (n) => {
        if (n === 1) throw refused;
      },
      finish: async () => undefined,
      recover: async (_n, failure) => {
        throw failure.error;
      },
      failed: (error) => void failures.push(error),
    });
    const [one, two] = await Promise.allSettled([handle(1), handle(2)]);
    expect(one).toEqual({ status: 'rejected', reason: refused });
    expect(two).toMatchObject({ status: 'rejected', reason: { message: expect.stringContaining('an earlier batch failed') } });
    expect(failures[0]).toBe(refused);
  });
});
