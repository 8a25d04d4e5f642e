import { describe, expect, it } from 'vitest';
import { handedOffsets } from './kafka.js';

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
