import ipaddr from 'ipaddr.js';
import type { LogMessage } from './message-log.js';
import { TOPICS } from './topics.js';

/** Headers of a dead letter on `visits.dlq` (written by services/enricher/decode.ts, read by the staff API). */
export const DLQ_HEADERS = {
  /** Why the message was dead-lettered. */
  reason: 'x-dlq-reason',
  /** The topic it came from, where a replay republishes it. */
  source: 'x-dlq-source',
  /** When it was dead-lettered (ISO 8601). */
  at: 'x-dlq-at',
  /** The beacon consumer's name of its source, written before x-dlq-source existed (still written). */
  topic: 'x-dlq-topic',
  /** How many times the message was replayed (carried by the republished message, so it comes back with it). */
  replays: 'x-dlq-replays',
} as const;

/**
 * The consumer group of the dead-letter topic whose committed position marks what was replayed:
 * the dead letters after it are pending. No consumer runs it; replays take from it (MessageLog.take).
 */
export const DLQ_REPLAY_GROUP = 'dlq-replay';

/** The topics a dead letter can come from, and be replayed to. */
export const DLQ_SOURCES = [TOPICS.visitsRaw, TOPICS.trackerRaw] as const;
export type DlqSource = (typeof DLQ_SOURCES)[number];

/**
 * The topic a dead letter came from: `x-dlq-source`, else `x-dlq-topic` (beacons before it), else
 * `visits.raw` (every dead letter without either came from the enricher of visits); null when the
 * header names no topic a dead letter can come from.
 */
export function dlqSourceOf(headers: Record<string, string> | undefined): DlqSource | null {
  const named = headers?.[DLQ_HEADERS.source] ?? headers?.[DLQ_HEADERS.topic] ?? TOPICS.visitsRaw;
  return (DLQ_SOURCES as readonly string[]).includes(named) ? (named as DlqSource) : null;
}

/** How many times a dead letter was replayed before (x-dlq-replays; 0 when absent or not a count). */
export function dlqReplaysOf(headers: Record<string, string> | undefined): number {
  const count = Number(headers?.[DLQ_HEADERS.replays] ?? 0);
  return Number.isSafeInteger(count) && count > 0 ? count : 0;
}

/** The message's own headers, without the dead-letter ones (`x-dlq-*`). */
export function ownHeaders(headers: Record<string, string> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(headers ?? {}).filter(([name]) => !name.startsWith('x-dlq-')));
}

/** The headers a replayed dead letter is republished with: its own, and one replay more. */
export function replayHeaders(headers: Record<string, string> | undefined): Record<string, string> {
  return { ...ownHeaders(headers), [DLQ_HEADERS.replays]: String(dlqReplaysOf(headers) + 1) };
}

/** What an erasure names (shared/analytics/visits.repository.ts ErasureTarget): exactly one of these. */
export interface ErasedTarget {
  link_id?: string;
  subdomain?: string;
  ip?: string;
  visit_id?: string;
}

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The textual forms of an IP address a message may hold: as written, and (IPv6) canonical (RFC 5952), uncompressed and zero-padded. */
export function ipForms(ip: string): string[] {
  const forms = new Set([ip]);
  try {
    const address = ipaddr.parse(ip);
    if (address.kind() === 'ipv6') {
      const v6 = address as ipaddr.IPv6;
      forms.add(v6.toRFC5952String());
      forms.add(v6.toNormalizedString());
      forms.add(
        v6
          .toNormalizedString()
          .split(':')
          .map((part) => part.padStart(4, '0'))
          .join(':'),
      );
      if (v6.isIPv4MappedAddress()) forms.add(v6.toIPv4Address().toString());
    }
  } catch {
    // Not an address ipaddr reads: the text as written is all there is to look for.
  }
  return [...forms];
}

/** A string field of a JSON object as it appears in its text, even in text that is not (or not whole) JSON. */
const fieldOf = (text: string, field: string): string | undefined => {
  try {
    const value = (JSON.parse(text) as Record<string, unknown> | null)?.[field];
    if (typeof value === 'string') return value;
  } catch {
    // Not JSON: read it from the text below.
  }
  return new RegExp(`"${field}"\\s*:\\s*"((?:[^"\\\\]|\\\\.)*)"`).exec(text)?.[1];
};

/**
 * Which dead letters an erasure removes (they are raw messages of `visits.raw` or `tracker.raw` that
 * failed to decode or validate, JSON or not, so they are matched on their text): a dead letter whose
 * value, key or headers hold the erased IP address (any of its forms, not as part of a longer
 * address), or the erased visit id; or that belongs to the erased link (its key, which is the link id
 * on `visits.raw`, or the link id anywhere in its text) or subdomain (`"subdomain":"<name>"` in its
 * text). With `ownerId` (an owner erasing their own), a dead letter whose text names another owner
 * (`owner_id`) is left alone; one that names none is removed when it matches.
 */
export function erasedDeadLetter(target: ErasedTarget, ownerId: string | undefined): (message: LogMessage) => boolean {
  const texts = (message: LogMessage) => [message.key, message.value, ...Object.values(message.headers ?? {})];
  let matches: (message: LogMessage) => boolean;
  if (target.ip !== undefined) {
    // Not inside a longer address (1.2.3.4 is not 11.2.3.45, 2001:db8::1 not 2001:db8::12), a port after it allowed.
    const forms = ipForms(target.ip).map((form) =>
      form.includes(':') ? `(?<![0-9a-f:])${escaped(form)}(?![0-9a-f]|[.:][0-9a-f])` : `(?<![0-9.])${escaped(form)}(?![0-9]|\\.[0-9])`,
    );
    const address = new RegExp(forms.join('|'), 'i');
    matches = (message) => texts(message).some((text) => address.test(text));
  } else if (target.visit_id !== undefined) {
    const id = target.visit_id.toLowerCase();
    matches = (message) => texts(message).some((text) => text.toLowerCase().includes(id));
  } else if (target.link_id !== undefined) {
    const id = target.link_id;
    matches = (message) => message.key === id || texts(message).some((text) => text.includes(id));
  } else if (target.subdomain !== undefined) {
    const name = target.subdomain;
    matches = (message) => fieldOf(message.value, 'subdomain') === name;
  } else if (ownerId !== undefined) {
    // No target but an owner: an account's deletion, every dead letter that names the account.
    return (message) => fieldOf(message.value, 'owner_id') === ownerId;
  } else return () => false;
  if (ownerId === undefined) return matches;
  return (message) => {
    const owner = fieldOf(message.value, 'owner_id');
    return (owner === undefined || owner === ownerId) && matches(message);
  };
}
