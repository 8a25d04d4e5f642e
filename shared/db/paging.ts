import type { SelectQueryBuilder } from 'kysely';
import type { SeqPageAt } from '../http/pagination.js';
import type { DB } from './schema.js';

/** Tables listed newest first by their `seq` column. */
type SeqTable = 'links' | 'webhook_deliveries' | 'notifications';

/** `limit` rows of a table keyed by `seq`, newest first, from where a page starts (after a cursor's seq, or at an offset). */
export function pageBySeq<Q extends SelectQueryBuilder<DB, SeqTable, object>>(query: Q, limit: number, at: SeqPageAt): Q {
  const from = 'offset' in at ? query.offset(at.offset) : at.afterSeq !== undefined ? query.where('seq', '<', at.afterSeq as never) : query;
  return from.orderBy('seq', 'desc').limit(limit) as Q;
}
