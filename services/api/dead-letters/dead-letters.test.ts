import { describe, expect, it } from 'vitest';
import { DEAD_LETTER_CURSOR, decodeCursor, encodeCursor, toView } from './dead-letters.service.js';

describe('dead-letter cursors', () => {
  it("carry each partition's next offset, and every value of the pattern decodes to positions", () => {
    const cursor = encodeCursor({ 0: 12, 3: 0, 5: 99 });
    expect(cursor).toBe('d1.0-12.3-0.5-99');
    expect(cursor).toMatch(DEAD_LETTER_CURSOR);
    expect(decodeCursor(cursor)).toEqual({ 0: 12, 3: 0, 5: 99 });
    // A partition named twice: the furthest position.
    expect(decodeCursor('d1.2-5.2-3')).toEqual({ 2: 5 });
    for (const refused of ['d1', 'd1.', 'd1.01-2', 'd1.1-2.', 's1.5', 'd1.1-1000000000000000']) expect(refused).not.toMatch(DEAD_LETTER_CURSOR);
  });
});

describe('a dead letter as staff read it', () => {
  it('shows NUL and unpaired surrogates as U+FFFD, leaves the x-dlq-* headers out, and a time it cannot read as null', () => {
    const view = toView({
      key: 'k\u0000',
      value: '{"a":"\ud800"}',
      headers: { 'x-dlq-reason': 'undecodable JSON', 'x-dlq-at': 'yesterday', 'x-origin': 'edge\u0000' },
      partition: 2,
      offset: 7,
      timestamp: null,
    });
    expect(view).toEqual({
      id: '2-7',
      partition: 2,
      offset: 7,
      source_topic: 'visits.raw',
      reason: 'undecodable JSON',
      dead_lettered_at: null,
      key: 'k\ufffd',
      message: '{"a":"\ufffd"}',
      headers: { 'x-origin': 'edge\ufffd' },
      replays: 0,
    });
  });

  it('falls back to the record time for the dead-letter time', () => {
    expect(toView({ key: 'k', value: 'v', partition: 0, offset: 0, timestamp: '2025-01-01T00:00:00.000Z' }).dead_lettered_at).toBe('2025-01-01T00:00:00.000Z');
  });
});
