import { describe, expect, it } from 'vitest';
import { PACK_MAX_BYTES, PACKED_HEADER, packMessages, unpackRecord } from './kafka-pack.js';
import type { LogMessage } from './message-log.js';

const visit = (key: string, n: number, headers?: Record<string, string>): LogMessage => ({
  key,
  value: JSON.stringify({ link: key, n }),
  ...(headers ? { headers } : {}),
});
/** Every message the records carry, in the records' order, as the consumer reads them. */
const unpacked = (records: ReturnType<typeof packMessages>) => records.flatMap((record) => unpackRecord({ ...record, headers: record.headers ?? {} }));
/** The values of one key, in order. */
const ofKey = (messages: LogMessage[], key: string) => messages.filter((message) => message.key === key).map((message) => message.value);

describe('packing the messages of one key into one Kafka record (kafka-pack.ts)', () => {
  it('packs consecutive messages of a key into one record and gives them back intact, in order', () => {
    const messages = [visit('a', 1), visit('a', 2), visit('b', 1), visit('a', 3), visit('b', 2)];
    const records = packMessages(messages, 500);
    expect(records).toHaveLength(2);
    expect(records[0]).toEqual({ key: 'a', value: [1, 2, 3].map((n) => visit('a', n).value).join('\n'), headers: { [PACKED_HEADER]: '3' } });
    const back = unpacked(records);
    expect(back).toHaveLength(5);
    for (const key of ['a', 'b']) expect(ofKey(back, key)).toEqual(ofKey(messages, key));
    expect(back.every((message) => !(PACKED_HEADER in (message.headers ?? {})))).toBe(true);
  });

  it('sends a lone message as a plain record, as before packing existed (no header)', () => {
    expect(packMessages([visit('a', 1), visit('b', 1)], 500)).toEqual([
      { key: 'a', value: visit('a', 1).value },
      { key: 'b', value: visit('b', 1).value },
    ]);
  });

  it('keeps one record a message when packing is off (most 1)', () => {
    const messages = [visit('a', 1), visit('a', 2)];
    expect(packMessages(messages, 1)).toEqual(messages);
  });

  it('closes a record at `most` messages and at PACK_MAX_BYTES', () => {
    const messages = Array.from({ length: 12 }, (_, n) => visit('a', n));
    expect(packMessages(messages, 5).map((record) => record.headers?.[PACKED_HEADER] ?? '1')).toEqual(['5', '5', '2']);
    const big = Array.from({ length: 5 }, (_, n) => ({ key: 'a', value: `${n}`.padEnd(PACK_MAX_BYTES / 2 - 10, 'x') }));
    const records = packMessages(big, 500);
    expect(records.map((record) => record.headers?.[PACKED_HEADER] ?? '1')).toEqual(['2', '2', '1']);
    expect(records.every((record) => record.value.length <= PACK_MAX_BYTES)).toBe(true);
    expect(ofKey(unpacked(records), 'a')).toEqual(big.map((message) => message.value));
  });

  it('never packs a value holding a line feed, and keeps its key in order around it', () => {
    const hostile = { key: 'a', value: '{"path":"/x"}\n{"forged":true}' };
    const messages = [visit('a', 1), visit('a', 2), hostile, visit('a', 3)];
    const records = packMessages(messages, 500);
    expect(records.map((record) => record.headers?.[PACKED_HEADER] ?? '1')).toEqual(['2', '1', '1']);
    expect(records[1]).toEqual(hostile);
    expect(ofKey(unpacked(records), 'a')).toEqual(messages.map((message) => message.value));
  });

  it('packs only messages with the same headers, each message keeping its own, the key in order', () => {
    const again = { 'lt-redelivered': '1' };
    const messages = [visit('a', 1), visit('a', 2, again), visit('a', 3, again), visit('a', 4)];
    const records = packMessages(messages, 500);
    expect(records.map((record) => record.headers)).toEqual([undefined, { ...again, [PACKED_HEADER]: '2' }, undefined]);
    const back = unpacked(records);
    expect(back.map((message) => message.value)).toEqual(messages.map((message) => message.value));
    expect(back.map((message) => message.headers)).toEqual([{}, again, again, {}]);
  });

  it('sends a message that already carries the packing header alone (it is never read as a pack it is not)', () => {
    const odd = { key: 'a', value: 'x', headers: { [PACKED_HEADER]: '7' } };
    expect(packMessages([visit('a', 1), odd, visit('a', 2)], 500)).toEqual([
      { key: 'a', value: visit('a', 1).value },
      odd,
      { key: 'a', value: visit('a', 2).value },
    ]);
  });
});
