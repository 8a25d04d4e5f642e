import { z } from 'zod';
/** Longest text a visit keeps in each column taken from the request (the edge cuts, the schemas check). */
export const VISIT_TEXT_MAX = { user_agent: 2000, referrer: 2000, accept_language: 200, query: 4000 };
/** A request header (or query) as visit text, cut to its column's length. */
export const visitText = (value, column) => (value ?? '').slice(0, VISIT_TEXT_MAX[column]);
/**
 * A visit as the ingest edge publishes it on `visits.raw` (key = link id). The edge decides
 * `visit_id` (UUIDv7), the time and `ip_public`; the enricher adds everything derived.
 */
export const RawVisitSchema = z.object({
    visit_id: z.uuid(),
    ts: z.iso.datetime({ offset: true }),
    kind: z.enum(['visit', 'bot', 'attack', 'beacon']).default('visit'),
    owner_id: z.string().max(64),
    subdomain: z.string().min(1).max(63),
    link_id: z.string().max(64).default(''),
    slug: z.string().max(200).default(''),
    ip_public: z.string().max(45),
    user_agent: z.string().max(VISIT_TEXT_MAX.user_agent).default(''),
    referrer: z.string().max(VISIT_TEXT_MAX.referrer).default(''),
    accept_language: z.string().max(VISIT_TEXT_MAX.accept_language).default(''),
    query: z.string().max(VISIT_TEXT_MAX.query).default(''),
    /** The redirect appended the visit id to the target (link option): the enricher merges a beacon that arrived first. */
    expects_beacon: z.boolean().default(false),
});
//# sourceMappingURL=raw-visit.js.map