import { describe, expect, it } from 'vitest';
import { orderedStages } from './stages.js';

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
});
