import type { z } from 'zod';
import type { LogMessage } from '../../shared/visit-log/visit-log.js';

export type Decoded<T> = { kind: 'ok'; value: T } | { kind: 'dlq'; reason: string; message: LogMessage };

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
 * Decodes and validates one message of the visit log against its schema, or says why it goes to the
 * dead-letter topic (the reason names each failing field, within 500 characters). Pure: no I/O.
 * A lone UTF-16 surrogate (valid JSON, e.g. "\ud800") makes ClickHouse refuse the whole insert, so
 * the batch would be redelivered for ever and block its partition: such a message is dead-lettered.
 */
export function decodeMessage<T>(schema: z.ZodType<T>, what: string, message: LogMessage): Decoded<T> {
  let json: unknown;
  try {
    json = JSON.parse(message.value);
  } catch {
    return { kind: 'dlq', reason: 'undecodable JSON', message };
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const reason = parsed.error.issues.map((issue) => `${issue.path.join('.') || 'message'}: ${issue.message}`).join('; ');
    return { kind: 'dlq', reason: `invalid ${what}: ${reason}`.slice(0, 500), message };
  }
  const malformed = malformedText(parsed.data, '');
  if (malformed !== undefined) return { kind: 'dlq', reason: `invalid ${what}: ${malformed}: not well-formed Unicode`.slice(0, 500), message };
  return { kind: 'ok', value: parsed.data };
}
