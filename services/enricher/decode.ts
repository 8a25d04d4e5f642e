import type { z } from 'zod';
import type { Context } from '#shared/context.js';
import { DLQ_HEADERS, type DlqSource } from '#shared/message-log/dead-letters.js';
import { TOPICS } from '#shared/message-log/topics.js';
import type { LogMessage } from '#shared/message-log/message-log.js';
import { poisonReason, type Poison } from './poison.js';

/** A message for the dead-letter topic, with the reason it goes there. */
export interface DeadLetter {
  reason: string;
  message: LogMessage;
  /** The metric label, when the caller that found the reason names it; else derived from the decoder's reasons. */
  code?: string;
  /** The stage a poison message failed in (`x-dlq-stage`). */
  stage?: string;
}

const UNDECODABLE = 'undecodable JSON';

export type Decoded<T> = { kind: 'ok'; value: T } | ({ kind: 'dlq' } & DeadLetter);

/** The path of the first string holding a lone UTF-16 surrogate, searched through objects and arrays. */
function malformedText(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return /\p{Cs}/u.test(value) ? path : undefined;
  if (value === null || typeof value !== 'object') return undefined;
  for (const [key, inner] of Object.entries(value)) {
    const found = malformedText(inner, path ? `${path}.${key}` : key);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * Whether a message's JSON text can decode to a lone surrogate: it holds one itself, or a `\uD800`–
 * `\uDFFF` escape (most messages have neither, and skip the walk through the decoded value).
 */
const mayHoldLoneSurrogate = (text: string) => /\\u[dD][89a-fA-F]|\p{Cs}/u.test(text);

/**
 * Decodes and validates one message of the message log against its schema, or says why it goes to the
 * dead-letter topic (the reason names each failing field, within 500 characters). Pure: no I/O.
 * A lone UTF-16 surrogate (valid JSON, e.g. "\ud800") makes ClickHouse refuse the whole insert, so
 * the batch would be redelivered for ever and block its partition: such a message is dead-lettered.
 */
export function decodeMessage<T>(schema: z.ZodType<T>, what: string, message: LogMessage): Decoded<T> {
  let json: unknown;
  try {
    json = JSON.parse(message.value);
  } catch {
    return { kind: 'dlq', reason: UNDECODABLE, message };
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const reason = parsed.error.issues.map((issue) => `${issue.path.join('.') || 'message'}: ${issue.message}`).join('; ');
    return { kind: 'dlq', reason: `invalid ${what}: ${reason}`.slice(0, 500), message };
  }
  const malformed = mayHoldLoneSurrogate(message.value) ? malformedText(parsed.data, '') : undefined;
  if (malformed !== undefined) return { kind: 'dlq', reason: `invalid ${what}: ${malformed}: not well-formed Unicode`.slice(0, 500), message };
  return { kind: 'ok', value: parsed.data };
}

/** What dead-lettering uses: the log it publishes to, the metrics it counts in, the logger. */
export type DeadLetterDeps = Pick<Context, 'messageLog' | 'metrics' | 'log'>;

/**
 * Sends messages of `source` to `visits.dlq` unchanged, with their headers and `x-dlq-reason`,
 * `x-dlq-source` (where a replay republishes them) and `x-dlq-at` (and any extra headers), counts
 * them by code and logs the first reason. Awaited before the batch commits: nothing is lost.
 */
export async function deadLetter(context: DeadLetterDeps, source: DlqSource, dead: DeadLetter[], extraHeaders: Record<string, string> = {}): Promise<void> {
  if (dead.length === 0) return;
  const at = new Date().toISOString();
  await context.messageLog.publish(
    TOPICS.visitsDlq,
    dead.map(({ message, reason, stage }) => ({
      key: message.key,
      value: message.value,
      headers: {
        ...message.headers,
        [DLQ_HEADERS.reason]: reason,
        [DLQ_HEADERS.source]: source,
        [DLQ_HEADERS.at]: at,
        ...(stage ? { 'x-dlq-stage': stage } : {}),
        ...extraHeaders,
      },
    })),
  );
  for (const { reason, code } of dead) context.metrics.visitsDeadLettered.inc({ reason: code ?? (reason === UNDECODABLE ? 'undecodable' : 'invalid') });
  context.log.warn({ count: dead.length, first: dead[0]!.reason }, 'messages sent to the dead-letter topic');
}

/**
 * Dead-letters the poison messages isolated from a failed batch (poison.ts): reason
 * `<stage> stage failed: <error>`, counted as `stage_failed`, each logged with its error.
 */
export async function deadLetterPoisons(
  context: DeadLetterDeps,
  source: DlqSource,
  poisons: Poison<LogMessage>[],
  extraHeaders: Record<string, string> = {},
): Promise<void> {
  if (poisons.length === 0) return;
  await deadLetter(
    context,
    source,
    poisons.map(({ message, failure }) => ({ message, reason: poisonReason(failure), code: 'stage_failed', stage: failure.stage })),
    extraHeaders,
  );
  for (const { message, failure } of poisons) {
    context.log.error(
      { key: message.key, stage: failure.stage, err: failure.error },
      'poison message: it failed its batch alone and went to the dead-letter topic',
    );
  }
}
