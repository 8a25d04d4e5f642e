// Issue 40 items 2, 3, 7: a link's redirect rules, its A/B split and its query forwarding. The
// schemas check them on write; the edge evaluates them from the cached link (no database read).
import { LRUCache } from 'lru-cache';
import { z } from 'zod';
import { rule } from '#shared/i18n/index.js';
import { HTTP_URL, MAX_TARGET_URL_LENGTH } from './urls.js';
import { parseUserAgent } from '#shared/visits/enrichment.js';
import type { GeoLookup } from '#shared/geo.js';
import { firstLanguage, firstMatchingRule, forwardQuery, type RuleFacts } from './rule-match.js';

export { firstLanguage, forwardQuery } from './rule-match.js';

/** Most rules a link holds (the redirect benchmark uses 10). */
export const MAX_RULES = 20;
/** Fewest and most variants of an A/B split. */
export const MIN_VARIANTS = 2;
export const MAX_VARIANTS = 5;
/** Most values one condition lists. */
const MAX_VALUES = 50;

const target = z
  .string()
  .max(MAX_TARGET_URL_LENGTH - 1)
  .regex(HTTP_URL, rule('http_url'));
const values = (pattern: RegExp, example: string) =>
  z
    .array(z.string().regex(pattern))
    .min(1)
    .max(MAX_VALUES)
    .meta({ example: [example] });
const TIME = /^([01]\d|2[0-3]):[0-5]\d$/;

/** One condition of a rule: the request matches when any listed value matches (names compared case-insensitively). */
export const RuleConditionSchema = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('device'),
    values: z
      .array(z.enum(['desktop', 'mobile', 'tablet']))
      .min(1)
      .max(3),
  }),
  z.strictObject({ type: z.literal('os'), values: values(/^[A-Za-z0-9 ._-]{1,40}$/, 'iOS') }),
  z.strictObject({ type: z.literal('browser'), values: values(/^[A-Za-z0-9 ._-]{1,40}$/, 'Chrome') }),
  z.strictObject({ type: z.literal('country'), values: values(/^[A-Z]{2}$/, 'DE') }),
  z.strictObject({ type: z.literal('language'), values: values(/^[a-z]{2,3}$/, 'de') }),
  z.strictObject({
    type: z.literal('time'),
    from: z.string().regex(TIME).meta({ description: 'HH:MM, UTC, inclusive.' }),
    to: z
      .string()
      .regex(TIME)
      .meta({ description: 'HH:MM, UTC, exclusive; before `from` the window spans midnight; equal to `from`, the whole day (of `days`).' }),
    days: z.array(z.number().int().min(0).max(6)).min(1).max(7).optional().meta({ description: 'UTC weekdays, 0 = Sunday; all when absent.' }),
  }),
  z.strictObject({
    type: z.literal('query'),
    name: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/),
    value: z.string().max(200).optional().meta({ description: 'Without it, the parameter only has to be present.' }),
  }),
]);
export type RuleCondition = z.output<typeof RuleConditionSchema>;

export const RedirectRuleSchema = z.strictObject({ condition: RuleConditionSchema, target_url: target });
export type RedirectRule = z.output<typeof RedirectRuleSchema>;

export const RulesSchema = z
  .array(RedirectRuleSchema)
  .max(MAX_RULES)
  .meta({
    description:
      `Up to ${MAX_RULES} redirect rules, tried in order: the first whose condition matches sends the visitor to its target_url; ` +
      "when none matches, the link's variants (or target_url) decide. Conditions: `device` (desktop, mobile, tablet), `os` and " +
      '`browser` (names as ua-parser-js gives them, e.g. iOS, Android, Chrome; case-insensitive), `country` (ISO 3166 alpha-2 of the ' +
      'address), `language` (the first language of Accept-Language), `time` (a UTC window, optionally on weekdays) and `query` (a ' +
      'parameter of the short URL, optionally with a value). A rule target is not checked against the platform hosts beyond its syntax ' +
      'here: the service refuses platform hosts as for target_url. The visit records the rule that matched (its index).',
  });

export const VariantsSchema = z
  .array(z.strictObject({ target_url: target, weight: z.number().int().min(1).max(100) }))
  .min(MIN_VARIANTS)
  .max(MAX_VARIANTS)
  .meta({
    description:
      `An A/B split: ${MIN_VARIANTS}–${MAX_VARIANTS} targets with integer weights (1–100). A visitor is sent to a variant chosen ` +
      'by a hash of their address and user agent with the link id, so the same visitor keeps their variant without a cookie. ' +
      "Rules are tried first; the link's own target_url is not used while variants are set. The visit records the variant (its index).",
  });
export type Variant = z.output<typeof VariantsSchema>[number];

export const FORWARD_QUERY_DOC =
  "Passes the short URL's query on to the target: its parameters follow the target's; on a clash the visitor's parameter wins (the " +
  "target's of that name is dropped), as Shlink and Dub do. `lt_visit` is never forwarded. Without it, a create takes the subdomain's " +
  '`forward_query` (false unless set).';

/** What the edge evaluates a link's routing on. */
export interface RoutedLink {
  id: string;
  target_url: string;
  rules: RedirectRule[] | null;
  variants: Variant[] | null;
  forward_query: boolean;
}

/** The facts of a request rules read, each worked out only when a rule asks. */
export interface RouteRequest {
  at: number;
  ip: string;
  userAgent: string;
  acceptLanguage: string;
  query: string;
}

/** Where a request goes: the target, and the rule or variant (index) that chose it, -1 for none. */
export interface Route {
  target: string;
  rule: number;
  variant: number;
}

/**
 * Parsing a user agent costs about 100 µs and traffic repeats a few thousand: the edge keeps the
 * parse of the most recent distinct agents a device, OS or browser rule read (a few hundred KB at most).
 */
const agents = new LRUCache<string, ReturnType<typeof parseUserAgent>>({ max: 5_000 });
function agentOf(userAgent: string) {
  let agent = agents.get(userAgent);
  if (!agent) agents.set(userAgent, (agent = parseUserAgent(userAgent)));
  return agent;
}

/** Lazily worked-out request facts: the user agent is parsed and the address looked up at most once. */
class Facts implements RuleFacts {
  private agent?: ReturnType<typeof parseUserAgent>;
  private countryCode?: string;
  private firstLanguage?: string;
  constructor(
    readonly request: RouteRequest,
    private readonly geo: () => GeoLookup | undefined,
  ) {}
  get at() {
    return this.request.at;
  }
  get query() {
    return this.request.query;
  }
  private ua() {
    return (this.agent ??= agentOf(this.request.userAgent));
  }
  device() {
    return this.ua().device_type;
  }
  os() {
    return this.ua().os;
  }
  browser() {
    return this.ua().browser;
  }
  language() {
    return (this.firstLanguage ??= firstLanguage(this.request.acceptLanguage));
  }
  country() {
    return (this.countryCode ??= this.geo()?.lookup(this.request.ip)?.country ?? '');
  }
}

/** FNV-1a of a text's UTF-16 code units onto a hash, then a separator, so that ("ab", "c") and ("a", "bc") differ; no array per call (the hot path). */
function fnv1a(hash: number, text: string): number {
  for (let index = 0; index < text.length; index++) hash = Math.imul(hash ^ text.charCodeAt(index), 0x01000193);
  return Math.imul(hash ^ 0x0a, 0x01000193);
}

/**
 * A 32-bit hash of a visitor (address and user agent) keyed with a link id: FNV-1a over the UTF-16
 * code units, then MurmurHash3's finaliser so that every bit depends on every input bit. It picks a
 * split's variant and is never stored or shown, so it needs no secret and no resistance to
 * collisions, only an even spread; a SHA-256 here cost an A/B link about 0.5 µs a redirect.
 */
export function variantHash(linkId: string, ip: string, userAgent: string): number {
  let hash = fnv1a(fnv1a(fnv1a(0x811c9dc5, linkId), ip), userAgent);
  hash = Math.imul(hash ^ (hash >>> 16), 0x85ebca6b);
  hash = Math.imul(hash ^ (hash >>> 13), 0xc2b2ae35);
  return (hash ^ (hash >>> 16)) >>> 0;
}

/** The variant a visitor gets: a point of the weights' total chosen by the visitor's hash keyed with the link id. */
export function variantOf(linkId: string, variants: Variant[], ip: string, userAgent: string): number {
  let total = 0;
  for (const variant of variants) total += variant.weight;
  let point = variantHash(linkId, ip, userAgent) % total;
  for (let index = 0; index < variants.length; index++) {
    point -= variants[index]!.weight;
    if (point < 0) return index;
  }
  return variants.length - 1;
}

/** Where a link sends a request: the first matching rule, else a variant, else its target; with the query forwarded when asked. */
export function routeOf(link: RoutedLink, request: RouteRequest, geo: () => GeoLookup | undefined): Route {
  let route: Route | undefined;
  if (link.rules && link.rules.length > 0) {
    const facts = new Facts(request, geo);
    const index = firstMatchingRule(link.rules, facts);
    if (index >= 0) route = { target: link.rules[index]!.target_url, rule: index, variant: -1 };
  }
  if (!route && link.variants && link.variants.length > 0) {
    const variant = variantOf(link.id, link.variants, request.ip, request.userAgent);
    route = { target: link.variants[variant]!.target_url, rule: -1, variant };
  }
  route ??= { target: link.target_url, rule: -1, variant: -1 };
  if (link.forward_query) route.target = forwardQuery(route.target, request.query);
  return route;
}
