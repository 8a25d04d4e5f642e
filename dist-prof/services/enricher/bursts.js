import { LRUCache } from 'lru-cache';
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
export function burstDetector({ maxVisits, windowSec }) {
    const windowMs = windowSec * 1000;
    /** Per pair: the visits within the window, by visit id, in arrival order (a Map keeps it). */
    const pairs = new LRUCache({ max: PAIRS });
    const calm = { burst: false, started: false, visits: 0 };
    return {
        windowSec,
        judge(linkId, visitorHash, visitId, at) {
            if (maxVisits === 0)
                return calm;
            const key = `${linkId}|${visitorHash}`;
            let recent = pairs.get(key);
            if (!recent)
                pairs.set(key, (recent = new Map()));
            const seen = recent.get(visitId);
            if (seen)
                return seen.judgement;
            // Forget what fell out of the window (oldest first), and keep at most one allowance beyond it.
            for (const [id, entry] of recent) {
                if (entry.at > at - windowMs && recent.size <= maxVisits * 2)
                    break;
                recent.delete(id);
            }
            let visits = 1;
            let previous;
            for (const entry of recent.values()) {
                if (entry.at > at - windowMs && entry.at <= at)
                    visits++;
                previous = entry.judgement;
            }
            const burst = visits > maxVisits;
            const judgement = { burst, started: burst && !previous?.burst, visits };
            recent.set(visitId, { at, judgement });
            return judgement;
        },
    };
}
//# sourceMappingURL=bursts.js.map