import type { Context } from '../../shared/context.js';
import { RawVisitSchema, type RawVisit } from '../../shared/visits/raw-visit.js';
import { TOPICS } from '../../shared/visit-log/topics.js';
import type { Consumer, LogMessage } from '../../shared/visit-log/visit-log.js';
import { enrich } from './enrich.js';
import { openGeoLookup } from './geo.js';
import { insertVisits } from './visit-writer.js';

/** What became of one message: inserted, or sent to the dead-letter topic with the reason. */
export type Outcome = { kind: 'ok'; visit: RawVisit } | { kind: 'dlq'; reason: string; message: LogMessage };

/** Decodes and validates one message of `visits.raw`. Pure: no I/O. */
export function decodeVisit(message: LogMessage): Outcome {
  let json: unknown;
  try {
    json = JSON.parse(message.value);
  } catch {
    return { kind: 'dlq', reason: 'undecodable JSON', message };
  }
  const parsed = RawVisitSchema.safeParse(json);
  if (!parsed.success) {
    const reason = parsed.error.issues.map((issue) => `${issue.path.join('.') || 'message'}: ${issue.message}`).join('; ');
    return { kind: 'dlq', reason: `invalid visit: ${reason}`.slice(0, 500), message };
  }
  // A lone UTF-16 surrogate (valid JSON, e.g. "\ud800") makes ClickHouse refuse the whole insert, so
  // the batch would be redelivered for ever and block its partition: dead-letter it here instead.
  const malformed = Object.entries(parsed.data).find(([, value]) => typeof value === 'string' && /\p{Cs}/u.test(value));
  if (malformed) return { kind: 'dlq', reason: `invalid visit: ${malformed[0]}: not well-formed Unicode`, message };
  return { kind: 'ok', visit: parsed.data };
}

export const ENRICHER_GROUP = 'enricher';

/**
 * The enricher role: consumes `visits.raw` in batches, enriches the valid visits (geolocation,
 * user agent, bot and attack classification: enrich.ts), inserts them into ClickHouse and
 * sends the rest to `visits.dlq` with their reason. The batch resolves (and its offsets are
 * committed) only after both writes succeeded; a failure redelivers the whole batch.
 */
export async function startEnricher(context: Context): Promise<Consumer> {
  const { visitLog, analytics, log } = context;
  const geo = await openGeoLookup();
  const enrichOne = (visit: RawVisit) => enrich(visit, geo);
  return visitLog.consume({
    groupId: ENRICHER_GROUP,
    topic: TOPICS.visitsRaw,
    maxBatch: 1000,
    handler: async (messages) => {
      const outcomes = messages.map(decodeVisit);
      const visits = outcomes.flatMap((outcome) => (outcome.kind === 'ok' ? [outcome.visit] : []));
      const dead = outcomes.flatMap((outcome) => (outcome.kind === 'dlq' ? [outcome] : []));
      await insertVisits(analytics, visits, enrichOne);
      if (dead.length > 0) {
        await visitLog.publish(
          TOPICS.visitsDlq,
          dead.map(({ message, reason }) => ({ key: message.key, value: message.value, headers: { ...message.headers, 'x-dlq-reason': reason } })),
        );
        log.warn({ count: dead.length, first: dead[0]!.reason }, 'visits sent to the dead-letter topic');
      }
    },
  });
}
