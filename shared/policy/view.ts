/**
 * The privacy policy's logic without its schemas: the fields, defaults and bounds, and what an
 * unauthenticated reader may get. Pure and free of Node and zod, so the dashboard's preview of an
 * unsaved policy runs this very code and cannot drift from what the server publishes.
 * policy.ts (the one module every public endpoint asks) re-exports it with the zod schemas.
 */

/**
 * The switches of the policy, each off by default (private unless the owner opens it): the spec's
 * nine, and stats_show_attack_paths (issue 34).
 */
export const POLICY_SWITCHES = [
  'stats_public',
  'stats_show_visits_list',
  'stats_show_ip',
  'stats_show_internal_ip',
  'stats_show_geo',
  'stats_show_ua',
  'stats_show_referrer',
  'stats_show_links',
  'stats_show_owner',
  'stats_show_attack_paths',
] as const;
export type PolicySwitch = (typeof POLICY_SWITCHES)[number];

/** Longest publish delay: 30 days. */
export const MAX_PUBLISH_DELAY_SEC = 2_592_000;
/** Most items a public list may return, whatever the owner sets. */
export const MAX_PUBLIC_ITEMS = 1_000;

export type Policy = Record<PolicySwitch, boolean> & { stats_publish_delay_sec: number; stats_max_items: number };

export const POLICY_DEFAULTS: Policy = {
  stats_public: false,
  stats_show_visits_list: false,
  stats_show_ip: false,
  stats_show_internal_ip: false,
  stats_show_geo: false,
  stats_show_ua: false,
  stats_show_referrer: false,
  stats_show_links: false,
  stats_show_owner: false,
  stats_show_attack_paths: false,
  stats_publish_delay_sec: 0,
  stats_max_items: 50,
};

/** The policy of a stored subdomain row. */
export function policyOf(row: Policy): Policy {
  const policy = {} as Record<string, unknown>;
  for (const name of POLICY_SWITCHES) policy[name] = row[name];
  policy.stats_publish_delay_sec = row.stats_publish_delay_sec;
  policy.stats_max_items = row.stats_max_items;
  return policy as Policy;
}

/**
 * Visit columns each switch opens to a public reader (the columns of ClickHouse `visits`). The
 * coordinates (`latitude`, `longitude`) are opened by no switch: the geolocation switch publishes
 * what it says, country, region and city, and a point on a map would be finer than a city.
 */
const VISIT_COLUMNS_BY_SWITCH: Partial<Record<PolicySwitch, readonly string[]>> = {
  stats_show_ip: ['ip_public'],
  stats_show_internal_ip: ['ip_lan'],
  stats_show_geo: ['country', 'region', 'city'],
  stats_show_ua: ['user_agent', 'browser', 'browser_version', 'os', 'os_version', 'device_type'],
  stats_show_referrer: ['referrer', 'referrer_host'],
  stats_show_links: ['slug'],
  // An attack attempt's slug is the path it asked for; publicVisitRow keeps each kind to its switch.
  stats_show_attack_paths: ['slug'],
};
/**
 * Breakdowns of a public report each switch opens (the statistics' dimensions). UTM sources tell
 * where traffic came from, as referrers do.
 */
const BREAKDOWNS_BY_SWITCH: Partial<Record<PolicySwitch, readonly string[]>> = {
  stats_show_geo: ['country', 'city'],
  stats_show_ua: ['browser', 'os', 'device_type'],
  stats_show_referrer: ['referrer_host', 'utm_source'],
  stats_show_links: ['link'],
};
/**
 * Visit columns any public reader of a visible list gets: when and what kind. Never the visit id
 * (it is what the tracker's consent is asked for) nor the link id.
 */
const ALWAYS_PUBLIC_VISIT_COLUMNS = ['ts', 'kind'] as const;

/** Link columns a public list reads (seq only orders and pages): never target, tags, ids, limits or client ids. */
export const PUBLIC_LINK_COLUMNS = ['seq', 'subdomain', 'slug', 'title', 'created_at'] as const;
export type PublicLinkColumn = (typeof PUBLIC_LINK_COLUMNS)[number];

/** What an unauthenticated reader may see of a subdomain, decided from its policy alone. */
export interface PublicView {
  /** Aggregates are public. */
  stats: boolean;
  /** The recent-visits list is public. */
  visitsList: boolean;
  links: boolean;
  owner: boolean;
  /** The paths attack attempts asked for (visitor-chosen text, no link) are public. */
  attackPaths: boolean;
  /** Which visit details are public, by kind. */
  details: { ip: boolean; internal_ip: boolean; geo: boolean; ua: boolean; referrer: boolean };
  /** Columns of a public visit row; public queries select these and nothing else. */
  visitColumns: string[];
  /** Breakdowns (dimensions) a public report shows; the others are not queried. */
  breakdowns: string[];
  /** Public data is at least this old. */
  publishDelaySec: number;
  /** Public items were created at or before this time (now minus the publish delay). */
  publishedBefore: Date;
  /** Public lists return at most this many items. */
  maxItems: number;
  /** The switches that are on, by name: which statistics and details are public. */
  shown: PolicySwitch[];
}

export function publicView(policy: Policy, now = Date.now()): PublicView {
  const opened = (bySwitch: Partial<Record<PolicySwitch, readonly string[]>>) =>
    (Object.entries(bySwitch) as [PolicySwitch, readonly string[]][]).flatMap(([name, names]) => (policy[name] ? names : []));
  const visitColumns: string[] = [...new Set([...ALWAYS_PUBLIC_VISIT_COLUMNS, ...opened(VISIT_COLUMNS_BY_SWITCH)])];
  return {
    stats: policy.stats_public,
    visitsList: policy.stats_show_visits_list,
    links: policy.stats_show_links,
    owner: policy.stats_show_owner,
    attackPaths: policy.stats_show_attack_paths,
    details: {
      ip: policy.stats_show_ip,
      internal_ip: policy.stats_show_internal_ip,
      geo: policy.stats_show_geo,
      ua: policy.stats_show_ua,
      referrer: policy.stats_show_referrer,
    },
    visitColumns,
    breakdowns: opened(BREAKDOWNS_BY_SWITCH),
    publishDelaySec: policy.stats_publish_delay_sec,
    publishedBefore: new Date(now - policy.stats_publish_delay_sec * 1000),
    maxItems: Math.min(policy.stats_max_items, MAX_PUBLIC_ITEMS),
    shown: POLICY_SWITCHES.filter((name) => policy[name]),
  };
}

/**
 * A public visit row as the policy lets it out: the slug of a link's visit only with
 * stats_show_links; the path an attack attempt asked for (any visitor can make one up, e.g.
 * `/wp-admin/FREE-BITCOIN-…`, to put text on the owner's page) only with stats_show_attack_paths.
 */
export function publicVisitRow(row: Record<string, unknown>, view: PublicView): Record<string, unknown> {
  if (!('slug' in row) || (row.kind === 'attack' ? view.attackPaths : view.links)) return row;
  const { slug: _hidden, ...shown } = row;
  return shown;
}

/** The filters a public report may take: a link, by its slug (never its id). */
export interface PublicReportFilters {
  link?: string;
}

/**
 * The filters a public reader asked for, cut to what the policy shows: a filter on a dimension the
 * reader may not see would reveal its counts, so it is dropped and the report is the unfiltered
 * one. The link filter needs stats_show_links (and the report then narrows only to a link the
 * public list shows; see the statistics service).
 */
export function publicReportFilters(view: PublicView, asked: PublicReportFilters): PublicReportFilters {
  return view.links && asked.link ? { link: asked.link } : {};
}

/** The `public` block of the public page payload (GET /api/v1/subdomains/{name}): which parts are public. */
export interface PublicSummary {
  stats: boolean;
  visits_list: boolean;
  links: boolean;
  owner: boolean;
  ip: boolean;
  internal_ip: boolean;
  geo: boolean;
  ua: boolean;
  referrer: boolean;
  publish_delay_sec: number;
  max_items: number;
}

export function publicSummary(view: PublicView): PublicSummary {
  return {
    stats: view.stats,
    visits_list: view.visitsList,
    links: view.links,
    owner: view.owner,
    ...view.details,
    publish_delay_sec: view.publishDelaySec,
    max_items: view.maxItems,
  };
}
