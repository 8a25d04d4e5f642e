import { z } from 'zod';
import { MAX_PUBLIC_ITEMS, MAX_PUBLISH_DELAY_SEC, POLICY_DEFAULTS, POLICY_SWITCHES, type PolicySwitch } from './view.js';

/**
 * The one privacy-policy module (the architecture's "where privacy is enforced"): a subdomain's
 * policy fields, their types, defaults and bounds, and what an unauthenticated reader may get.
 * Every public endpoint asks this module; none reads the policy flags itself. The logic lives in
 * view.ts (browser-safe, shared with the dashboard's preview); this file adds the schemas.
 */
export * from './view.js';

const SWITCH_DOCS: Record<PolicySwitch, string> = {
  stats_public: 'Aggregates are public (GET /api/v1/stats?subdomain=).',
  stats_show_visits_list: 'The recent-visits list is public (GET /api/v1/visits?subdomain=).',
  stats_show_ip: "Public visit rows carry the visitor's public IP.",
  stats_show_internal_ip: 'Public visit rows carry the LAN IP (only ever collected with consent).',
  stats_show_geo:
    'Public visit rows carry country, region and city, and aggregates the country and city breakdowns; never the coordinates (latitude, longitude).',
  stats_show_ua: 'Public visit rows and aggregates carry the user agent (browser, OS, device).',
  stats_show_referrer: 'Public visit rows and aggregates carry the referrer.',
  stats_show_links:
    "The subdomain's links are listed publicly (page payload and GET /api/v1/links?subdomain=), public visit rows carry the link's slug and public statistics break visits down by link.",
  stats_show_owner: 'The public page names the owner (display name only, never the e-mail).',
  stats_show_attack_paths:
    'Public visit rows of attack attempts carry the path they asked for (text any visitor chooses, not a link); without it they carry no slug.',
};

const switchSchema = (name: PolicySwitch) => z.boolean().meta({ description: `${SWITCH_DOCS[name]} Default false.` });
const delaySchema = z
  .number()
  .int()
  .min(0)
  .max(MAX_PUBLISH_DELAY_SEC)
  .meta({ description: `Visits younger than this many seconds are not public. Default 0, at most ${MAX_PUBLISH_DELAY_SEC} (30 days).` });
const maxItemsSchema = z
  .number()
  .int()
  .min(1)
  .max(MAX_PUBLIC_ITEMS)
  .meta({ description: `Most items a public list returns. Default ${POLICY_DEFAULTS.stats_max_items}, between 1 and ${MAX_PUBLIC_ITEMS}.` });

/** The policy's fields as they are read (all present): the spec's eleven and stats_show_attack_paths. */
export const PolicySchema = z
  .object({
    ...(Object.fromEntries(POLICY_SWITCHES.map((name) => [name, switchSchema(name)])) as Record<PolicySwitch, z.ZodBoolean>),
    stats_publish_delay_sec: delaySchema,
    stats_max_items: maxItemsSchema,
  })
  .meta({ id: 'SubdomainPolicy', description: 'Privacy policy of a subdomain. Private by default: every switch off.' });

/** The policy's fields as a PATCH sets them: any subset. */
export const PolicyPatchShape = PolicySchema.partial().shape;
