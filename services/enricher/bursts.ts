import { LRUCache } from 'lru-cache';

/** How the enricher judged one visit of a visitor to a link. */
export interface BurstJudgement {
  /** The visit is beyond the visitor's allowance for the window: a bot by behaviour. */
  burst: boolean;
  /** The visit that crossed the allowance (the one burst that raises security.suspicious). */
  started: boolean;
  /** The visitor's visits to the link within the window, this one included. */
  visits: number;
}

/** Visitor-and-link pairs remembered at once (least recently seen forgotten first). */
const PAIRS = 200_000;

/**
 * The behaviour signal of the enricher: a visitor (the salted hash of address and user agent)
 * that visits one link more than `maxVisits` times within `windowSec` seconds of visit time is
 * bursting. Its visits beyond the allowance are bots (`burst`); the first of them raises
 * `security.suspicious` once per burst (a pause of a whole window ends it).
 *
 * Visits of a link arrive in order on one partition (the partition key is the link id), so one
 * enricher sees a link's visits; a redelivered visit (same visit id) gets the judgement it got
 * the first time instead of being counted again. `maxVisits` 0 turns the signal off.
 */
export function burstDetector({ maxVisits, windowSec }: { maxVisits: number; windowSec: number }) {
  const windowMs = windowSec * 1000;
  /**
   * Per pair: the visits within the window, in arrival order. An array, not a Map: most pairs
   * hold one visit, and a Map's table is several times its size (every pair outlives many
   * young-generation collections, so its bytes are copied and promoted).
   */
  const pairs = new LRUCache<string, { id: string; at: number; judgement: BurstJudgement }[]>({ max: PAIRS });
  const calm: BurstJudgement = Object.freeze({ burst: false, started: false, visits: 0 });
  /** The judgement of a pair's first visit in memory (the allowance is at least 1). */
  const firstVisit: BurstJudgement = Object.freeze({ burst: false, started: false, visits: 1 });

  return {
    windowSec,
    judge(linkId: string, visitorHash: string, visitId: string, at: number): BurstJudgement {
      if (maxVisits === 0) return calm;
      const key = `${linkId}|${visitorHash}`;
      const recent = pairs.get(key);
      if (!recent) {
        // A literal of one: an empty array would set aside room for 17 on its first push.
        pairs.set(key, [{ id: visitId, at, judgement: firstVisit }]);
        return firstVisit;
      }
      const seen = recent.find((entry) => entry.id === visitId);
      if (seen) return seen.judgement;
      // Forget what fell out of the window (oldest first), and keep at most one allowance beyond it.
      let gone = 0;
      while (gone < recent.length && (recent[gone]!.at <= at - windowMs || recent.length - gone > maxVisits * 2)) gone++;
      if (gone > 0) recent.splice(0, gone);
      let visits = 1;
      for (const entry of recent) if (entry.at > at - windowMs && entry.at <= at) visits++;
      const previous = recent.at(-1)?.judgement;
      const burst = visits > maxVisits;
      const judgement = { burst, started: burst && !previous?.burst, visits };
      recent.push({ id: visitId, at, judgement });
      return judgement;
    },
  };
}
