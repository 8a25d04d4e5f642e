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
