import { deduplicatedBy } from '#shared/analytics/analytics.js';
import type { StoredVisit } from '#shared/analytics/visits.repository.js';
import type { RawVisit } from '#shared/visits/raw-visit.js';
import type { Enrichment } from '#shared/visits/enrichment.js';
import { encodeVisits, timeRange, VISIT_ROW_COLUMNS } from '#shared/visits/visit-rows.js';
import type { Repositories } from '../repositories.js';

/** Inserts one batch into `visits` (encodeVisits). */
export async function insertVisits(
  repositories: Pick<Repositories, 'visits'>,
  visits: RawVisit[],
  enrichmentOf: (visit: RawVisit, index: number) => Enrichment,
): Promise<void> {
  if (visits.length === 0) return;
  await repositories.visits.insertBatch(await encodeVisits(visits, enrichmentOf));
}

/**
 * Inserts again, as they were and with their own tokens, the blocks that stored some visits of a
 * redelivered batch (0006_visits_insert_token.sql). An insert cut between `visits` and its views (a
 * crash of the process running chDB, or a view's write failing) left visits that a rollup never
 * counted; inserted again with the same token, `visits` and every view holding the block drop it,
 * and a view that missed it takes it. Blocks read back from `visits` (any version of each visit:
 * the columns the views read are the same in each), so the block is whole even when the batch
 * holds only part of it. Returns the blocks inserted again.
 */
export async function reinsertStoredBlocks(repositories: Pick<Repositories, 'visits'>, stored: Iterable<StoredVisit>, visits: RawVisit[]): Promise<number> {
  const tokens = new Set<string>();
  for (const row of stored) if (row.insert_token) tokens.add(row.insert_token);
  if (tokens.size === 0) return 0;
  const columns = [...VISIT_ROW_COLUMNS] as [string, ...string[]];
  const { from, to } = timeRange(visits);
  const day = 86_400_000;
  const repository = repositories.visits;
  for (const token of tokens) {
    const body = await repository.blockRows(columns, token, from - day, to + day);
    if (body.length === 0) continue;
    await repository.insertBatch({ table: 'visits', columns, body, settings: deduplicatedBy(token) });
  }
  return tokens.size;
}
