import { describe, expect, it } from 'vitest';
import { keyedQueue, mergePartitions, type StoredLogMessage } from './message-log.js';

const at = (partition: number, offset: number, second: number): StoredLogMessage => ({
  key: `k${partition}`,
  value: `${partition}-${offset}`,
  partition,
  offset,
  timestamp: new Date(Date.UTC(2025, 0, 1, 0, 0, second)).toISOString(),
});
const values = (messages: StoredLogMessage[]) => messages.map((message) => message.value);

describe('mergePartitions (a page of several partitions, oldest first)', () => {
  const partitions = new Map([
    [0, [at(0, 10, 1), at(0, 11, 4), at(0, 12, 5)]],
    [1, [at(1, 3, 2), at(1, 4, 3)]],
    [2, []],
  ]);

  it('merges by record time, keeps each partition in offset order, and says where each partition goes on', () => {
    expect(mergePartitions(partitions, 4, { 0: 10, 1: 3, 2: 7 })).toEqual({
      messages: [at(0, 10, 1), at(1, 3, 2), at(1, 4, 3), at(0, 11, 4)],
      next: { 0: 12, 1: 5, 2: 7 },
    });
  });

  it('keeps a partition in offset order even when its record times go back, and breaks ties by partition', () => {
    const skewed = new Map([
      [1, [at(1, 0, 5), at(1, 1, 1)]],
      [0, [at(0, 0, 5)]],
    ]);
    expect(values(mergePartitions(skewed, 3, { 0: 0, 1: 0 }).messages)).toEqual(['0-0', '1-0', '1-1']);
  });

  it('returns everything when the limit is larger, and nothing for a limit of 0', () => {
    expect(mergePartitions(partitions, 10, {}).messages).toHaveLength(5);
    expect(mergePartitions(partitions, 0, { 0: 10 })).toEqual({ messages: [], next: { 0: 10 } });
  });
});

describe('keyedQueue', () => {
  it('runs calls of one key one after the other, a failure included, and calls of other keys meanwhile', async () => {
    const queue = keyedQueue();
    const events: string[] = [];
    const step =
      (name: string, ms: number, fail = false) =>
      async () => {
        events.push(`${name} start`);
        await new Promise((resolve) => setTimeout(resolve, ms));
        events.push(`${name} end`);
        if (fail) throw new Error(name);
        return name;
      };
    const results = await Promise.allSettled([queue('a', step('a1', 20, true)), queue('a', step('a2', 1)), queue('b', step('b1', 5))]);
    expect(results.map((result) => result.status)).toEqual(['rejected', 'fulfilled', 'fulfilled']);
    expect(events.indexOf('a2 start')).toBeGreaterThan(events.indexOf('a1 end'));
    expect(events.indexOf('b1 start')).toBeLessThan(events.indexOf('a1 end'));
  });
});
