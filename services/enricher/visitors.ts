import { randomBytes } from 'node:crypto';
import { toClickHouseTime } from '#shared/analytics/analytics.js';
import { isoTimeAt } from '#shared/time.js';
import type { Repositories } from '../repositories.js';

/** Days a salt is kept: today's and yesterday's (late visits); older ones are deleted. */
const SALT_DAYS = 2;

/** The UTC day of a time (ISO text or epoch ms), `YYYY-MM-DD`. */
export const dayOf = (time: string | number) => isoTimeAt(typeof time === 'number' ? time : Date.parse(time)).slice(0, 10);

/** Daily salts shared by every enricher through Postgres (the first to ask creates the day's salt). */
export function saltBook({ visitorSalts: salts }: Pick<Repositories, 'visitorSalts'>) {
  const held = new Map<string, string>();
  return {
    async saltFor(day: string): Promise<string> {
      const known = held.get(day);
      if (known) return known;
      const salt = await salts.saltOrInsert(day, randomBytes(32).toString('hex'));
      // A new day: forget salts past their time, in the store and here.
      const oldest = new Date(Date.parse(`${day}T00:00:00Z`) - (SALT_DAYS - 1) * 86_400_000).toISOString().slice(0, 10);
      await salts.deleteBefore(oldest);
      held.set(day, salt);
      for (const old of [...held.keys()].sort().slice(0, -SALT_DAYS)) held.delete(old);
      return salt;
    },
  };
}

/** How many (link, visitor) pairs of a day the unique check remembers before asking ClickHouse again. */
const SEEN_MAX = 1_000_000;

interface UniqueCandidate {
  visitId: string;
  subdomain: string;
  linkId: string;
  hash: string;
  day: string;
  /** ISO time of the visit. */
  ts: string;
}

/**
 * First visit of a visitor to a link within the day (`visit.unique`). Visits of a link share a
 * partition, so one enricher sees them in order and its memory is authoritative for the links it
 * has loaded: the first time it meets a link on a day (after a start or a rebalance) it reads that
 * link's visitors of the day from ClickHouse once — other visits than the batch's own, so a
 * redelivered batch is judged exactly as the first time — and from then on answers from memory.
 */
export function uniqueVisitors({ visits }: Pick<Repositories, 'visits'>) {
  /** day → `link|hash` → visit_id of the first visit ('' when it is an earlier stored one). */
  const seen = new Map<string, Map<string, string>>();
  /** day → links whose visitors of the day are in `seen`. */
  const loaded = new Map<string, Set<string>>();
  const dayPairs = (day: string) => {
    let pairs = seen.get(day);
    if (!pairs) {
      // A new day: the days before yesterday are done.
      for (const old of [...seen.keys()].sort().slice(0, -(SALT_DAYS - 1))) {
        seen.delete(old);
        loaded.delete(old);
      }
      seen.set(day, (pairs = new Map<string, string>()));
      loaded.set(day, new Set());
    }
    return pairs;
  };
  return {
    /**
     * Forgets every visitor and link (after a batch that was remembered was not stored): each link
     * is read again from ClickHouse when next met, which then tells by the visits' times.
     */
    forget() {
      seen.clear();
      loaded.clear();
    },
    /**
     * Whether each candidate (in order) is the first of its (link, visitor, day). The answers are
     * remembered at once, for the batches judged after this one (`forget` undoes that when a batch
     * is not stored).
     */
    async firstOfDay(candidates: UniqueCandidate[]): Promise<boolean[]> {
      const toLoad = new Map<string, Set<string>>();
      for (const candidate of candidates) {
        dayPairs(candidate.day);
        if (!loaded.get(candidate.day)!.has(candidate.linkId)) toLoad.set(candidate.day, (toLoad.get(candidate.day) ?? new Set()).add(candidate.linkId));
      }
      /** day → `link|hash` → earliest stored time of another visit, for the links just loaded. */
      const stored = new Map<string, Map<string, string>>();
      for (const [day, links] of toLoad) {
        const rows = await visits.firstVisitorTimes(
          day,
          [...new Set(candidates.filter((entry) => links.has(entry.linkId)).map((entry) => entry.subdomain))],
          [...links],
          candidates.map((entry) => entry.visitId),
        );
        stored.set(day, new Map(rows.map((row) => [`${row.link_id}|${row.visitor_hash}`, row.first_ts])));
      }
      /** day → `link|hash` → the first visit's id ('' when it is an earlier stored one), as judged here. */
      const judged = new Map<string, Map<string, string>>();
      const first = candidates.map((candidate) => {
        const pair = `${candidate.linkId}|${candidate.hash}`;
        let ofDay = judged.get(candidate.day);
        if (!ofDay) judged.set(candidate.day, (ofDay = new Map<string, string>()));
        const known = ofDay.get(pair) ?? seen.get(candidate.day)!.get(pair);
        if (known !== undefined) return known === candidate.visitId;
        const earlier = stored.get(candidate.day)?.get(pair);
        const isFirst = earlier === undefined || earlier > toClickHouseTime(candidate.ts);
        ofDay.set(pair, isFirst ? candidate.visitId : '');
        return isFirst;
      });
      for (const [day, links] of toLoad) {
        const pairs = dayPairs(day);
        // Stored visitors of the links just loaded: not first any more, whoever comes next.
        for (const pair of stored.get(day)!.keys()) if (!pairs.has(pair)) pairs.set(pair, '');
        for (const link of links) loaded.get(day)!.add(link);
      }
      for (const [day, ofDay] of judged) {
        const pairs = dayPairs(day);
        for (const [pair, visitId] of ofDay) {
          if (pairs.size >= SEEN_MAX) {
            // Too many to hold: forget the day, its links are loaded again from ClickHouse.
            pairs.clear();
            loaded.get(day)!.clear();
          }
          pairs.set(pair, visitId);
        }
      }
      return first;
    },
  };
}
