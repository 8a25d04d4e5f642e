import { z } from 'zod';

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
  user_agent: z.string().max(2000).default(''),
  referrer: z.string().max(2000).default(''),
  accept_language: z.string().max(200).default(''),
  query: z.string().max(4000).default(''),
  /** The redirect appended the visit id to the target (link option): the enricher merges a beacon that arrived first. */
  expects_beacon: z.boolean().default(false),
});
export type RawVisit = z.output<typeof RawVisitSchema>;
