import { toClickHouseTime } from '../analytics/analytics.js';
import { z } from 'zod';
import { V4_OCTET } from '../ip.js';
import { VISIT_TEXT_MAX, VisitTimeSchema } from '../visits/raw-visit.js';
import { rule } from '../i18n/index.js';

/** Query parameter the redirect appends to the target URL of a link with `append_visit_id`. */
export const VISIT_PARAM = 'lt_visit';

/** How old a redirect's visit may be when a beacon attaches to it (the script starts its own visit past it). */
export const BEACON_ATTACH_WINDOW_MS = 24 * 3600_000;

/** The time (ms) a UUIDv7 carries in its first 48 bits, or undefined for another UUID version. */
export function uuidv7Time(id: string): number | undefined {
  const hex = id.replace(/-/g, '');
  if (!/^[0-9a-f]{32}$/i.test(hex) || hex[12] !== '7') return undefined;
  return parseInt(hex.slice(0, 12), 16);
}

const OCTET = V4_OCTET;
const HEX = '[0-9a-fA-F]';
/**
 * LAN addresses a WebRTC host candidate may show, as one pattern (the OpenAPI document states it as
 * is): private (10/8, 172.16/12, 192.168/16), CGNAT (100.64/10) and link-local (169.254/16) IPv4 in
 * dotted decimal; unique-local (fc00::/7) and link-local (fe80::/10) IPv6 (hex groups and colons, an
 * optional zone); or the mDNS name (`<uuid>.local`) browsers show instead.
 */
export const LAN_ADDRESS = new RegExp(
  '^(?:' +
    [
      `10\\.${OCTET}\\.${OCTET}\\.${OCTET}`,
      `172\\.(?:1[6-9]|2[0-9]|3[01])\\.${OCTET}\\.${OCTET}`,
      `192\\.168\\.${OCTET}\\.${OCTET}`,
      `169\\.254\\.${OCTET}\\.${OCTET}`,
      `100\\.(?:6[4-9]|[7-9][0-9]|1[01][0-9]|12[0-7])\\.${OCTET}\\.${OCTET}`,
      `(?:[fF][cCdD]${HEX}{2}|[fF][eE][89aAbB]${HEX}):[0-9a-fA-F:]{1,34}(?:%[0-9A-Za-z]{1,16})?`,
      `${HEX}{8}-${HEX}{4}-${HEX}{4}-${HEX}{4}-${HEX}{12}\\.local`,
    ].join('|') +
    ')$',
);

/** What the tracker may send to `/tracker/collect` (besides its consent token). */
export const SignalsSchema = z.strictObject({
  timezone: z
    .string()
    .max(64)
    .regex(/^[A-Za-z0-9_+\-/]+$/, rule('time_zone'))
    .optional()
    .meta({ description: 'IANA time zone of the browser.', example: 'Europe/Berlin' }),
  screen: z
    .strictObject({
      width: z.number().int().min(1).max(100_000),
      height: z.number().int().min(1).max(100_000),
      pixel_ratio: z.number().min(0.1).max(20).optional(),
      color_depth: z.number().int().min(1).max(64).optional(),
    })
    .optional(),
  network: z
    .strictObject({
      type: z.string().max(20).optional(),
      effective_type: z.string().max(10).optional(),
      downlink: z.number().min(0).max(100_000).optional(),
      rtt: z.number().int().min(0).max(600_000).optional(),
      save_data: z.boolean().optional(),
    })
    .optional()
    .meta({ description: 'The Network Information API, where the browser has it.' }),
  capabilities: z
    .record(z.string().regex(/^[a-z0-9_]{1,40}$/, rule('signal_keys')), z.union([z.boolean(), z.number(), z.string().max(100)]))
    .refine((value) => Object.keys(value).length <= 40, rule('max_capabilities', { max: 40 }))
    .meta({ maxProperties: 40, propertyNames: { pattern: '^[a-z0-9_]{1,40}$' } })
    .optional()
    .meta({ description: 'Feature flags and figures (cookies, touch points, languages, hardware concurrency, …).' }),
  lan_ip: z
    .string()
    .max(255)
    .regex(LAN_ADDRESS, rule('lan_address'))
    .optional()
    .meta({ description: 'LAN address from a WebRTC host candidate; kept only with `lan_ip` consent.' }),
});
export type Signals = z.output<typeof SignalsSchema>;

/** The server-side facts of a visit the tracker starts itself (no redirect before it), decided by the ingest node. */
const OwnVisitSchema = z.object({
  subdomain: z.string().min(1).max(63),
  ip_public: z.string().max(45),
  user_agent: z.string().max(VISIT_TEXT_MAX.user_agent),
  accept_language: z.string().max(VISIT_TEXT_MAX.accept_language),
  referrer: z.string().max(VISIT_TEXT_MAX.referrer),
  query: z.string().max(VISIT_TEXT_MAX.query),
});

/**
 * A message of `tracker.raw` (key = visit id): a consent decision (`own_visit` set when the tracker
 * started the visit), or collected signals under a consent. Later messages of a visit win.
 */
export const BeaconMessageSchema = z.object({
  type: z.enum(['consent', 'collect']),
  visit_id: z.uuid(),
  ts: VisitTimeSchema,
  analytics: z.boolean(),
  lan_ip: z.boolean(),
  own_visit: OwnVisitSchema.optional(),
  signals: SignalsSchema.optional(),
});
export type BeaconMessage = z.output<typeof BeaconMessageSchema>;

/** The beacon columns of a visit row (and of `visit_beacons`): what consent lets through, nothing more. */
export interface BeaconState {
  visit_id: string;
  received_at: string;
  consent_analytics: 0 | 1;
  consent_lan_ip: 0 | 1;
  ip_lan: string;
  timezone: string;
  screen: string;
  network: string;
  capabilities: string;
  collected: 0 | 1;
  version: number;
}

/**
 * The state a message leaves: consent gating happens here, whatever the message carries — no
 * signal without analytics consent, no LAN address without lan_ip consent.
 */
export function beaconStateOf(message: BeaconMessage): BeaconState {
  const analytics = message.analytics;
  const lanIp = analytics && message.lan_ip;
  const signals = analytics && message.type === 'collect' ? (message.signals ?? {}) : {};
  const { width, height, ...screenRest } = signals.screen ?? { width: 0, height: 0 };
  const capabilities = { ...signals.capabilities, ...screenRest };
  return {
    visit_id: message.visit_id,
    received_at: toClickHouseTime(message.ts),
    consent_analytics: analytics ? 1 : 0,
    consent_lan_ip: lanIp ? 1 : 0,
    ip_lan: lanIp ? (signals.lan_ip ?? '') : '',
    timezone: signals.timezone ?? '',
    screen: signals.screen ? `${width}x${height}` : '',
    network: signals.network ? JSON.stringify(signals.network) : '',
    capabilities: Object.keys(capabilities).length > 0 ? JSON.stringify(capabilities) : '',
    collected: message.type === 'collect' && analytics ? 1 : 0,
    version: Date.parse(message.ts),
  };
}
