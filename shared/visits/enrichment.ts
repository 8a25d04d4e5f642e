import { isbotMatch } from 'isbot';
import { LRUCache } from 'lru-cache';
import { UAParser } from 'ua-parser-js';
import { classifyAttack, type AttackType } from '#shared/visits/attack.js';
import type { RawVisit } from '#shared/visits/raw-visit.js';
import type { GeoLookup } from '#shared/geo.js';

/** What the enricher derives from a raw visit: pure functions of the visit (and the geo database). */
export interface Enrichment {
  kind: RawVisit['kind'];
  country: string;
  region: string;
  city: string;
  latitude: number | null;
  longitude: number | null;
  browser: string;
  browser_version: string;
  os: string;
  os_version: string;
  device_type: string;
  is_bot: 0 | 1;
  bot_name: string;
  is_attack: 0 | 1;
  attack_type: string;
  /** Set by the enricher from the day's salt (visitors.ts), not by the pure step. */
  visitor_hash?: string;
  is_unique?: 0 | 1;
}

/** Operating systems of desktop computers: a user agent on one of these without a device type is a desktop. */
const DESKTOP_OS = new Set(['Windows', 'macOS', 'Mac OS', 'Linux', 'Ubuntu', 'Debian', 'Fedora', 'Chromium OS', 'FreeBSD', 'OpenBSD']);

/** The bot a user agent names, or undefined for a human browser. No user agent at all is a bot too. */
export function botOf(userAgent: string): string | undefined {
  if (userAgent.trim() === '') return 'no user agent';
  const match = isbotMatch(userAgent);
  return match ? match.toLowerCase().slice(0, 64) : undefined;
}

/** What a user agent tells, parsed once per distinct string. */
interface AgentFacts {
  agent: ReturnType<typeof parseUserAgent>;
  bot: string | undefined;
}

/**
 * Parsing a user agent and matching it against the bot list costs about 100 µs, and traffic
 * repeats a few thousand agents: the facts of the most recent distinct agents are kept.
 */
const agents = new LRUCache<string, AgentFacts>({ max: 20_000 });
function agentFacts(userAgent: string): AgentFacts {
  let facts = agents.get(userAgent);
  if (!facts) agents.set(userAgent, (facts = { agent: parseUserAgent(userAgent), bot: botOf(userAgent) }));
  return facts;
}

/** Browser, OS and device class from a user agent (ua-parser-js). */
export function parseUserAgent(userAgent: string): Pick<Enrichment, 'browser' | 'browser_version' | 'os' | 'os_version' | 'device_type'> {
  const parsed = UAParser(userAgent);
  const os = parsed.os.name ?? '';
  return {
    browser: parsed.browser.name ?? '',
    browser_version: parsed.browser.major ?? '',
    os,
    os_version: parsed.os.version ?? '',
    device_type: parsed.device.type ?? (DESKTOP_OS.has(os) ? 'desktop' : ''),
  };
}

/**
 * Enriches one visit: geolocation of `ip_public`, user agent, bot and attack classification. An
 * attack wins over a bot, a bot over a plain visit; beacon rows keep their kind.
 */
export function enrich(visit: RawVisit, geo: GeoLookup): Enrichment {
  const place = geo.lookup(visit.ip_public);
  const { agent, bot: agentBot } = agentFacts(visit.user_agent);
  // A visit the edge already marked as a bot stays one.
  const bot = agentBot ?? (visit.kind === 'bot' ? 'marked at the edge' : undefined);
  // The edge records an attack's whole path as its slug; a visit's slug has no slash.
  const slug = visit.kind === 'attack' ? visit.slug.replace(/^\//, '') : visit.slug;
  const attack: AttackType | undefined = classifyAttack(`/${slug}?${visit.query}`) ?? (visit.kind === 'attack' ? 'scanner' : undefined);
  const kind: RawVisit['kind'] = attack ? 'attack' : visit.kind === 'beacon' ? 'beacon' : bot ? 'bot' : visit.kind;
  return {
    kind,
    country: place?.country ?? '',
    region: place?.region ?? '',
    city: place?.city ?? '',
    latitude: place?.latitude ?? null,
    longitude: place?.longitude ?? null,
    browser: agent.browser,
    browser_version: agent.browser_version,
    os: agent.os,
    os_version: agent.os_version,
    device_type: agent.device_type,
    is_bot: bot ? 1 : 0,
    bot_name: bot ?? '',
    is_attack: attack ? 1 : 0,
    attack_type: attack ?? '',
  };
}
