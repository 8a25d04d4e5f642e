import { describe, expect, it } from 'vitest';
import { handedOffsets, partitionJoiner } from './kafka.js';

describe('the Kafka consumer telling a redelivered batch (handedOffsets)', () => {
  it('flags the first batch of a partition after joining, and not the batch that follows it past the backlog', () => {
    const handed = handedOffsets();
    // The whole backlog of the partition in one batch (high watermark 110).
    expect(handed.handOver(0, '100', '109', '110')).toBe(true);
    expect(handed.handOver(0, '110', '119', '120')).toBe(false);
    // Partitions are tracked apart.
    expect(handed.handOver(1, '0', '9', '10')).toBe(true);
    expect(handed.handOver(1, '10', '19', '20')).toBe(false);
  });

  it('flags every batch of the backlog found on joining: a crashed member may have handed over more than the first batch holds', () => {
    // Guards the first version of the flag, which flagged only the first batch after joining: a
    // crashed process inserted [0, 10) and did not commit; after the restart the fetch gives [0, 5)
    // first, and [5, 12) held five visits already stored.
    const handed = handedOffsets();
    expect(handed.handOver(0, '0', '4', '12')).toBe(true);
    expect(handed.handOver(0, '5', '11', '12')).toBe(true);
    expect(handed.handOver(0, '12', '20', '21')).toBe(false);
  });

  it('flags a batch fetched again from an earlier offset after a failure, and the batches up to where the failed one reached', () => {
    const handed = handedOffsets();
    handed.handOver(0, '0', '9', '10');
    handed.handOver(0, '10', '19', '20');
    // [10, 20) failed; the fetch from 10 comes shorter.
    expect(handed.handOver(0, '10', '14', '20')).toBe(true);
    expect(handed.handOver(0, '15', '24', '30')).toBe(true);
    expect(handed.handOver(0, '25', '29', '30')).toBe(false);
  });

  it('forgets every partition when the group is joined again', () => {
    const handed = handedOffsets();
    handed.handOver(0, '0', '9', '10');
    handed.clear();
    expect(handed.handOver(0, '10', '19', '20')).toBe(true);
  });
});

describe('the Kafka consumer joining the batches of several partitions (partitionJoiner)', () => {
  /** A partition's slice of `count` messages keyed `key`, recording what the joiner did with it. */
  function slice(key: string, count: number, events: string[], redelivered = false) {
    return {
      messages: Array.from({ length: count }, (_, n) => ({ key, value: String(n) })),
      redelivered,
      heartbeat: () => Promise.resolve(),
      stopping: () => false,
      resolve: () => void events.push(`resolve ${key}`),
      commit: () => (events.push('commit'), Promise.resolve()),
    };
  }

  it('hands slices submitted in one turn over in one call, up to maxBatch messages, and resolves every offset then commits once after the call', async () => {
    const events: string[] = [];
    const calls: { keys: string[]; redelivered: boolean }[] = [];
    const join = partitionJoiner(
      async (messages, control) => {
        calls.push({ keys: [...new Set(messages.map((m) => m.key))], redelivered: control.redelivered });
        events.push('handler');
      },
      10,
      1,
    );
    await Promise.all([join(slice('a', 4, events)), join(slice('b', 4, events, true)), join(slice('c', 4, events))]);
    // a and b fill 8 of 10: c starts a call of its own.
    expect(calls).toEqual([
      { keys: ['a', 'b'], redelivered: true },
      { keys: ['c'], redelivered: false },
    ]);
    expect(events).toEqual(['handler', 'resolve a', 'resolve b', 'commit', 'handler', 'resolve c', 'commit']);
  });

  it('runs at most `concurrency` calls at once; slices that come meanwhile join the call waiting for its turn', async () => {
    const events: string[] = [];
    let running = 0;
    let most = 0;
    const sizes: number[] = [];
    // The first call holds its turn until the test lets it go (a gate, not a timer: no race under load).
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let started!: () => void;
    const firstStarted = new Promise<void>((resolve) => (started = resolve));
    const join = partitionJoiner(
      async (messages) => {
        sizes.push(messages.length);
        most = Math.max(most, ++running);
        if (sizes.length === 1) {
          started();
          await gate;
        }
        running--;
      },
      100,
      1,
    );
    const first = join(slice('a', 1, events));
    await firstStarted;
    // The first call is in flight: these three wait, together.
    const later = [join(slice('b', 1, events)), join(slice('c', 1, events))];
    await new Promise((resolve) => setTimeout(resolve, 5));
    later.push(join(slice('d', 1, events)));
    release();
    await Promise.all([first, ...later]);
    expect(most).toBe(1);
    expect(sizes).toEqual([1, 3]);
  });

  it('with minIntervalMs, starts a call of fewer than maxBatch messages no sooner than that after the call before; a full one at once', async () => {
    const events: string[] = [];
    const calls: { size: number; at: number }[] = [];
    const join = partitionJoiner(async (messages) => void calls.push({ size: messages.length, at: performance.now() }), 10, 1, 500);
    await join(slice('a', 2, events));
    // Ready right after the first call: it waits out the interval, and what comes meanwhile joins it.
    const second = join(slice('b', 2, events));
    await new Promise((resolve) => setTimeout(resolve, 50));
    await Promise.all([second, join(slice('c', 3, events))]);
    // Full: handed over at once, however recent the call before.
    await join(slice('d', 10, events));
    expect(calls.map((call) => call.size)).toEqual([2, 5, 10]);
    expect(calls[1]!.at - calls[0]!.at).toBeGreaterThanOrEqual(495);
    expect(calls[2]!.at - calls[1]!.at).toBeLessThan(300);
    expect(events.filter((event) => event === 'commit')).toHaveLength(3);
  });

  it('with minIntervalMs, does not hold a call whose partition holds more (a backlog), one that a slice did not fit, or one of a stopping consumer', async () => {
    const events: string[] = [];
    const calls: { keys: string[]; at: number }[] = [];
    const join = partitionJoiner(async (messages) => void calls.push({ keys: [...new Set(messages.map((m) => m.key))], at: performance.now() }), 10, 1, 5_000);
    const started = performance.now();
    await join(slice('first', 1, events));
    // A backlog: the partition has more than this slice.
    await join({ ...slice('backlog', 2, events), more: true });
    // Two slices of one turn that do not fit one call: the first call is closed and goes.
    await Promise.all([join(slice('x', 6, events)), join({ ...slice('y', 6, events), more: true })]);
    // The consumer stopping: handed over at once (and given up by its handler), not held.
    await join({ ...slice('stopping', 1, events), stopping: () => true });
    expect(calls.map((call) => call.keys)).toEqual([['first'], ['backlog'], ['x'], ['y'], ['stopping']]);
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it('rejects every slice of a call whose handler threw, resolving and committing none of them', async () => {
    const events: string[] = [];
    const join = partitionJoiner(
      async () => {
        throw new Error('insert failed');
      },
      10,
      2,
    );
    const results = await Promise.allSettled([join(slice('a', 2, events)), join(slice('b', 2, events))]);
    expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected']);
    expect(events).toEqual([]);
  });
});
