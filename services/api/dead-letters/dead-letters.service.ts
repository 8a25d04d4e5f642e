import type { Context } from '#shared/context.js';
import { AppError } from '#shared/errors.js';
import { withoutUnstorable as shown } from '#shared/http/fields.js';
import { DLQ_HEADERS, DLQ_REPLAY_GROUP, dlqReplaysOf, dlqSourceOf, ownHeaders, replayHeaders, type DlqSource } from '#shared/message-log/dead-letters.js';
import { TOPICS } from '#shared/message-log/topics.js';
import type { LogMessage, LogPositions, StoredLogMessage } from '#shared/message-log/message-log.js';

/** Dead letters republished per take of the replay group (on Kafka, each take joins the group once). */
export const REPLAY_CHUNK = 500;

/**
 * Cursors of the dead-letter list: per partition, the offset the next page starts at (`d1.` then
 * `<partition>-<offset>` pairs joined by `.`). Every value of the pattern is a position: a partition
 * the topic does not have is ignored, a position before the replay group's counts as it, one past
 * the end gives an empty page.
 */
export const DEAD_LETTER_CURSOR = /^d1(?:\.(?:0|[1-9][0-9]{0,4})-(?:0|[1-9][0-9]{0,14}))+$/;

export function encodeCursor(next: LogPositions): string {
  return `d1.${Object.entries(next)
    .map(([partition, offset]) => `${partition}-${offset}`)
    .join('.')}`;
}

/** The positions of a cursor the query schema admitted (the furthest, when a partition comes twice). */
export function decodeCursor(cursor: string): LogPositions {
  const positions: LogPositions = {};
  for (const pair of cursor.slice('d1.'.length).split('.')) {
    const [partition, offset] = pair.split('-').map(Number) as [number, number];
    positions[partition] = Math.max(offset, positions[partition] ?? 0);
  }
  return positions;
}

/** One pending dead letter, as staff read it. */
export interface DeadLetterView {
  id: string;
  partition: number;
  offset: number;
  source_topic: DlqSource | null;
  reason: string | null;
  dead_lettered_at: string | null;
  key: string;
  message: string;
  headers: Record<string, string>;
  replays: number;
}

/** An instant as ISO 8601 UTC (years 1970 to 9999), or null for anything else. */
function instant(text: string | undefined): string | null {
  if (text === undefined) return null;
  const ms = Date.parse(text);
  return Number.isFinite(ms) && ms >= 0 && ms <= 253_402_300_799_999 ? new Date(ms).toISOString() : null;
}

export function toView(message: StoredLogMessage): DeadLetterView {
  const reason = message.headers?.[DLQ_HEADERS.reason];
  return {
    id: `${message.partition}-${message.offset}`,
    partition: message.partition,
    offset: message.offset,
    source_topic: dlqSourceOf(message.headers),
    reason: reason === undefined ? null : shown(reason),
    dead_lettered_at: instant(message.headers?.[DLQ_HEADERS.at]) ?? instant(message.timestamp ?? undefined),
    key: shown(message.key),
    message: shown(message.value),
    headers: Object.fromEntries(Object.entries(ownHeaders(message.headers)).map(([name, value]) => [shown(name), shown(value)])),
    replays: dlqReplaysOf(message.headers),
  };
}

export type DeadLettersService = ReturnType<typeof deadLettersService>;

/**
 * The dead-letter topic for staff: the pending dead letters (those after the `dlq-replay` group's
 * committed position), read without moving it, and their replay to the topics they came from.
 */
export function deadLettersService({ messageLog, log }: Pick<Context, 'messageLog' | 'log'>) {
  const pendingPosition = { topic: TOPICS.visitsDlq, groupId: DLQ_REPLAY_GROUP } as const;

  /** A failure of the message log, as the 503 it is (logged: the answer names no cause). */
  const unavailable = (error: unknown, what: string, details: Record<string, unknown> = {}) => {
    if (error instanceof AppError) return error;
    log.warn({ err: error, ...details }, `dead letters: ${what} failed`);
    return new AppError(
      'service_unavailable',
      { reason: `the message log could not ${what}`, ...details },
      { messageKey: 'error.service_unavailable.dependency', params: { names: 'visit_log' }, cause: error },
    );
  };

  return {
    /** A page of pending dead letters, oldest first, from the cursor's positions (else from the replay group's). */
    async list(limit: number, cursor: string | undefined) {
      try {
        const page = await messageLog.peek({ ...pendingPosition, limit, from: cursor ? decodeCursor(cursor) : undefined });
        return {
          items: page.messages.map(toView),
          total: page.pending,
          next: page.more && page.messages.length > 0 ? encodeCursor(page.next) : null,
        };
      } catch (error) {
        throw unavailable(error, 'read the dead-letter topic');
      }
    },

    /**
     * Republishes pending dead letters, oldest first (all, or the first `limit`), to the topics they
     * came from, and moves the replay group past them, REPLAY_CHUNK at a time (each chunk committed
     * once published: an interrupted replay leaves the rest pending; a chunk whose commit failed is
     * published again by the next replay, which the enricher's deduplication by visit id absorbs).
     * At most the dead letters pending when it starts: a replayed message that is still poison comes
     * back behind them, with its reason, and waits for the next replay. A dead letter whose source
     * names no topic a dead letter can come from is passed over (counted as skipped).
     */
    async replay(limit: number | undefined) {
      let left: number;
      try {
        const { pending } = await messageLog.peek({ ...pendingPosition, limit: 0 });
        left = Math.min(limit ?? pending, pending);
      } catch (error) {
        throw unavailable(error, 'read the dead-letter topic');
      }
      let replayed = 0;
      let skipped = 0;
      while (left > 0) {
        let published = 0;
        let passed = 0;
        try {
          const taken = await messageLog.take({ ...pendingPosition, limit: Math.min(left, REPLAY_CHUNK) }, async (messages) => {
            const bySource = new Map<DlqSource, LogMessage[]>();
            for (const message of messages) {
              const source = dlqSourceOf(message.headers);
              if (source === null) continue;
              const batch = bySource.get(source) ?? [];
              batch.push({ key: message.key, value: message.value, headers: replayHeaders(message.headers) });
              bySource.set(source, batch);
            }
            for (const [topic, batch] of bySource) await messageLog.publish(topic, batch);
            published = [...bySource.values()].reduce((sum, batch) => sum + batch.length, 0);
            passed = messages.length - published;
          });
          if (taken.length === 0) break;
          left -= taken.length;
        } catch (error) {
          throw unavailable(error, 'replay the dead letters', { replayed, skipped });
        }
        replayed += published;
        skipped += passed;
      }
      let pending: number;
      try {
        pending = (await messageLog.peek({ ...pendingPosition, limit: 0 })).pending;
      } catch (error) {
        throw unavailable(error, 'read the dead-letter topic', { replayed, skipped });
      }
      if (replayed + skipped > 0) log.info({ replayed, skipped, pending }, 'dead letters replayed');
      return { replayed, skipped, pending };
    },
  };
}
