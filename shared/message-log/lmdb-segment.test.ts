import { describe, expect, it } from 'vitest';
import { decodeSegment, encodeSegment } from './lmdb.js';

describe('durable log segments', () => {
  it('stores visits as one buffer of text and reads them back as they were', () => {
    const messages = [
      { key: 'link-1', value: JSON.stringify({ visit_id: 'a', user_agent: 'line\nbreak\ttab', referrer: 'ünïcode ✓' }) },
      { key: '', value: '' },
      { key: 'sub', value: '{"x":1}' },
    ];
    const stored = encodeSegment(messages);
    expect(ArrayBuffer.isView(stored)).toBe(true);
    expect(decodeSegment(stored)).toEqual(messages.map(({ key, value }) => [key, value]));
  });

  it('keeps an entry per message when one has headers, a key with a tab or newline, or a value with a newline', () => {
    for (const odd of [
      { key: 'k', value: 'v', headers: { 'x-dlq-reason': 'invalid' } },
      { key: 'k\tk', value: 'v' },
      { key: 'k\nk', value: 'v' },
      { key: 'k', value: 'not json\nat all' },
    ]) {
      const messages = [{ key: 'a', value: 'b' }, odd];
      const stored = encodeSegment(messages);
      expect(Array.isArray(stored)).toBe(true);
      expect(decodeSegment(stored)).toEqual(messages.map(({ key, value, headers }) => (headers ? [key, value, headers] : [key, value])));
    }
  });
});
