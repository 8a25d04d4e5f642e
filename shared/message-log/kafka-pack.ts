// Packing the messages of one key into one Kafka record, on the hot topics (visits.raw,
// tracker.raw). kafkajs's cost is per record: the record's encoding (varints, Long timestamps and
// offsets), its grouping per partition, and on the consumer its decoding and the handing over of
// each message. A visit is a few hundred bytes, so that cost is most of what Kafka costs a visit
// (docs/benchmarks.md, "The production path as separate processes"). Visits of one link arrive
// together at high traffic: a record that carries the visits of one key, in order, keeps Kafka's
// contract (key = link id, one partition per key, order within the key) and pays the per-record
// cost once for many visits. LZ4 compresses the record's batch as before.
//
// The format: a record with the header `lt-packed: <n>` holds n messages of its key, their values
// joined by a line feed (a value holding a line feed is never packed: it goes alone). Every other
// header of the record belongs to each of its messages. A record without the header is one message,
// as every record was before: a consumer reads both, so consumers are upgraded before ingest nodes
// (docs/operations.md, "Upgrading a cluster"), and KAFKA_PACK_MESSAGES=1 turns packing off.
import type { LogMessage } from './message-log.js';

/** The header of a record that packs several messages: how many. */
export const PACKED_HEADER = 'lt-packed';
/** Largest value of a packed record (the broker's default message limit is 1 MiB, before compression). */
export const PACK_MAX_BYTES = 256 * 1024;

/** One Kafka record to send: a message, or several of one key packed. */
export interface PackedRecord {
  key: string;
  value: string;
  headers?: Record<string, string>;
}

/** The headers of a message as a comparable text ('' without any). */
const headersOf = (headers: Record<string, string> | undefined) => (headers && Object.keys(headers).length > 0 ? JSON.stringify(headers) : '');

/**
 * The records that carry `messages`: consecutive messages of one key with the same headers are
 * packed, at most `most` messages and PACK_MAX_BYTES a record. Each key's messages keep their
 * order (a key's record is closed before a message of that key that cannot join it is placed);
 * records of different keys may interleave differently from the messages, as partitions do.
 */
export function packMessages(messages: readonly LogMessage[], most: number): PackedRecord[] {
  if (most <= 1) return messages.map(({ key, value, headers }) => ({ key, value, ...(headers ? { headers } : {}) }));
  const records: PackedRecord[] = [];
  const open = new Map<string, { headers: Record<string, string> | undefined; signature: string; values: string[]; bytes: number }>();
  const close = (key: string) => {
    const group = open.get(key);
    if (!group) return;
    open.delete(key);
    if (group.values.length === 1) records.push({ key, value: group.values[0]!, ...(group.headers ? { headers: group.headers } : {}) });
    else records.push({ key, value: group.values.join('\n'), headers: { ...group.headers, [PACKED_HEADER]: String(group.values.length) } });
  };
  for (const { key, value, headers } of messages) {
    const signature = headersOf(headers);
    const group = open.get(key);
    if (group && (group.signature !== signature || group.values.length >= most || group.bytes + 1 + value.length > PACK_MAX_BYTES)) close(key);
    if (value.includes('\n') || value.length >= PACK_MAX_BYTES || (headers && PACKED_HEADER in headers)) {
      close(key);
      records.push({ key, value, ...(headers ? { headers } : {}) });
      continue;
    }
    const current = open.get(key);
    if (current) {
      current.values.push(value);
      current.bytes += 1 + value.length;
    } else open.set(key, { headers, signature, values: [value], bytes: value.length });
  }
  for (const key of [...open.keys()]) close(key);
  return records;
}

/** The messages a received record carries: itself, or the ones it packs. */
export function unpackRecord(message: LogMessage): LogMessage[] {
  const count = message.headers?.[PACKED_HEADER];
  if (count === undefined) return [message];
  const { [PACKED_HEADER]: _, ...headers } = message.headers!;
  return message.value.split('\n').map((value) => ({ key: message.key, value, headers }));
}
