import { createHash, randomBytes } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Analytics } from '../../shared/analytics/analytics.js';
import type { DB } from '../../shared/db/schema.js';

/** Days a salt is kept: today's and yesterday's (late visits); older ones are deleted. */
const SALT_DAYS = 2;

/** The UTC day of an ISO time, `YYYY-MM-DD`. */
export const dayOf = (iso: string) => new Date(iso).toISOString().slice(0, 10);

/**
 * The visitor hash: SHA-256 of the day's random salt, the address and the user agent (truncated
 * to 128 bits). Without the salt, which is deleted after SALT_DAYS, the hash tells nothing about
 * the address; the same visitor gets another hash the next day (uniques are per day).
 */
export function visitorHash(salt: string, ip: string, userAgent: string): string {
  return createHash('sha256').update(`${salt}\n${ip}\n${userAgent}`).digest('hex').slice(0, 32);
}

/** Daily salts shared by every enricher through Postgres (the first to ask creates the day's salt). */
export function saltBook(db: Kysely<DB>) {
  const held = new Map<string, string>();
  return {
    async saltFor(day: string): Promise<string> {
      const known = held.get(day);
      if (known) return known;
      await db
        .insertInto('visitor_salts')
        .values({ day, salt: randomBytes(32).toString('hex') })
        .onConflict((oc) => oc.column('day').doNothing())
        .execute();
      const row = await db.selectFrom('visitor_salts').select('salt').where('day', '=', day).executeTakeFirstOrThrow();
      // A new day: forget salts past their time, in the store and here.
      const oldest = new Date(Date.parse(`${day}T00:00:00Z`) - (SALT_DAYS - 1) * 86_400_000).toISOString().slice(0, 10);
      await db.deleteFrom('visitor_salts').where('day', '<', sql<string>`${oldest}::date`).execute();
      held.set(day, row.salt);
      for (const old of [...held.keys()].sort().slice(0, -SALT_DAYS)) held.delete(old);
      return row.salt;
    },
  };
}

/** How many (link, visitor) pairs of a day the unique check remembers before asking ClickHouse again. */
const SEEN_MAX = 1_000_000;

export interface UniqueCandidate {
  visitId: string;
  linkId: string;
  hash: string;
  day: string;
  /** ISO time of the visit. */
  ts: string;
}

const toClickHouseTime = (iso: string) => new Date(iso).toISOString().replace('T', ' ').replace('Z', '');

/**
 * First visit of a visitor to a link within the day (`visit.unique`). Visits of a link share a
 * partition, so one enricher sees them in order. It remembers which visit was the first of each
 * pair; pairs it does not know (after a restart or a rebalance) are looked up in ClickHouse, other
 * visits than the batch's own only, so a redelivered batch is judged exactly as the first time.
 */
export function uniqueTracker(analytics: Analytics) {
  /** day → `link|hash` → visit_id of the first visit ('' when it is an earlier stored one). */
  const seen = new Map<string, Map<string, string>>();
  return {
    /**
     * Whether each candidate (in order) is the first of its (link, visitor, day); `remember` records
     * the answer once the batch is stored.
     */
    async firstOfDay(candidates: UniqueCandidate[]): Promise<{ first: boolean[]; remember(): void }> {
      const unknown = candidates.filter((candidate) => !seen.get(candidate.day)?.has(`${candidate.linkId}|${candidate.hash}`));
      /** `day|link|hash` → earliest stored time of another visit. */
      const stored = new Map<string, string>();
      if (unknown.length > 0) {
        const result = await analytics.client.query({
          query: `SELECT toString(toDate(ts)) AS day, link_id, visitor_hash, toString(min(ts)) AS first_ts FROM visits
                  WHERE toDate(ts) IN {days:Array(Date)} AND link_id IN {links:Array(String)} AND visitor_hash IN {hashes:Array(String)}
                    AND visit_id NOT IN {ids:Array(UUID)}
                  GROUP BY day, link_id, visitor_hash`,
          query_params: {
            days: [...new Set(unknown.map((entry) => entry.day))],
            links: [...new Set(unknown.map((entry) => entry.linkId))],
            hashes: [...new Set(unknown.map((entry) => entry.hash))],
            ids: candidates.map((entry) => entry.visitId),
          },
          format: 'JSONEachRow',
        });
        for (const row of await result.json<{ day: string; link_id: string; visitor_hash: string; first_ts: string }>()) {
          stored.set(`${row.day}|${row.link_id}|${row.visitor_hash}`, row.first_ts);
        }
      }
      const firstOf = new Map<string, string>();
      const first = candidates.map((candidate) => {
        const pair = `${candidate.linkId}|${candidate.hash}`;
        const key = `${candidate.day}|${pair}`;
        const known = seen.get(candidate.day)?.get(pair) ?? firstOf.get(key);
        if (known !== undefined) return known === candidate.visitId;
        const earlier = stored.get(key);
        const isFirst = earlier === undefined || earlier > toClickHouseTime(candidate.ts);
        firstOf.set(key, isFirst ? candidate.visitId : '');
        return isFirst;
      });
      return {
        first,
        remember() {
          for (const [key, visitId] of firstOf) {
            const [day, ...rest] = key.split('|');
            let pairs = seen.get(day!);
            if (!pairs) {
              // A new day: the days before yesterday are done.
              for (const old of [...seen.keys()].sort().slice(0, -(SALT_DAYS - 1))) seen.delete(old);
              seen.set(day!, (pairs = new Map()));
            }
            if (pairs.size >= SEEN_MAX) pairs.clear();
            pairs.set(rest.join('|'), visitId);
          }
        },
      };
    },
  };
}
