import { z } from 'zod';

/** Longest text a visit keeps in each column taken from the request (the edge cuts, the schemas check). */
export const VISIT_TEXT_MAX = { user_agent: 2000, referrer: 2000, accept_language: 200, query: 4000 } as const;

/** A character Node's HTTP parser makes of a byte 0x80–0xFF of a header value (it reads header bytes as Latin-1). */
const HIGH_BYTE = /[\u0080-\u00ff]/;
/** A character no Latin-1 reading of bytes gives: the value is text already (set in process, as by inject), not bytes. */
const BEYOND_LATIN1 = /[\u0100-\uffff]/;
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
/** WHATWG UTF-8 decode: each invalid sequence becomes one U+FFFD. */
const lenientUtf8 = new TextDecoder('utf-8');

/**
 * A request header value as the text the client sent. Node hands header bytes over as Latin-1 (one
 * character per byte), so a browser's raw UTF-8 Referer read as mojibake (`例` as `ä¾\u008b`). Bytes that
 * are valid UTF-8 are decoded as such. Bytes that are not: a Referer (`url`) keeps them percent-encoded
 * (`%E9`, as a URL's own escape, so nothing is lost and the URL still parses); other headers get one
 * U+FFFD per invalid sequence. Only values holding a byte ≥ 0x80 are touched (one regex test on the
 * hot path); a value holding a character beyond Latin-1 is text already and is kept as it is.
 */
export function headerText(value: string, kind: 'text' | 'url' = 'text'): string {
  if (!HIGH_BYTE.test(value) || BEYOND_LATIN1.test(value)) return value;
  const bytes = Buffer.from(value, 'latin1');
  try {
    return strictUtf8.decode(bytes);
  } catch {
    if (kind === 'text') return lenientUtf8.decode(bytes);
    let encoded = '';
    for (const byte of bytes) encoded += byte < 0x80 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    return encoded;
  }
}

/** Cuts text to `max` UTF-16 units without splitting a surrogate pair (a lone half is no storable text). */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const code = text.charCodeAt(max - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}

/**
 * A request header, or the query, as visit text cut to its column's length; a header is decoded from
 * the bytes sent first (headerText). The query is not: Node refuses a request target with a byte ≥ 0x80.
 */
export function visitText(value: string | undefined, column: keyof typeof VISIT_TEXT_MAX): string {
  if (value === undefined) return '';
  return cut(column === 'query' ? value : headerText(value, column === 'referrer' ? 'url' : 'text'), VISIT_TEXT_MAX[column]);
}

/** The first and last instant of ClickHouse's DateTime64 (its documented range, UTC). */
const TIME_MIN = Date.UTC(1900, 0, 1);
const TIME_MAX = Date.UTC(2300, 0, 1) - 1;

/**
 * A visit's time: ISO 8601 with an offset, within DateTime64's documented range. A valid ISO text
 * outside it made the enricher fail the whole batch for ever (year 0000 is no Postgres date, for
 * the day's visitor salt; `9999-12-31T23:30:00-01:00` is year 10000), and chDB stores year 0000 as
 * another date. The year alone settles all but the first and last year (no second parse).
 */
export const VisitTimeSchema = z.iso.datetime({ offset: true }).refine((text) => {
  const year = Number(text.slice(0, 4));
  if (year > 1900 && year < 2299) return true;
  const time = Date.parse(text);
  return time >= TIME_MIN && time <= TIME_MAX;
}, 'outside 1900-01-01T00:00:00Z … 2299-12-31T23:59:59.999Z');

/**
 * A visit as the ingest edge publishes it on `visits.raw` (key = link id). The edge decides
 * `visit_id` (UUIDv7), the time and `ip_public`; the enricher adds everything derived.
 */
export const RawVisitSchema = z.object({
  visit_id: z.uuid(),
  ts: VisitTimeSchema,
  kind: z.enum(['visit', 'bot', 'attack', 'beacon']).default('visit'),
  owner_id: z.string().max(64),
  subdomain: z.string().min(1).max(63),
  // Looked up in Postgres (the max_visits check), whose text holds no U+0000: such an id failed its batch for ever.
  link_id: z
    .string()
    .max(64)
    .refine((id) => !id.includes('\u0000'), 'holds U+0000')
    .default(''),
  slug: z.string().max(200).default(''),
  ip_public: z.string().max(45),
  user_agent: z.string().max(VISIT_TEXT_MAX.user_agent).default(''),
  referrer: z.string().max(VISIT_TEXT_MAX.referrer).default(''),
  accept_language: z.string().max(VISIT_TEXT_MAX.accept_language).default(''),
  query: z.string().max(VISIT_TEXT_MAX.query).default(''),
  /** The redirect appended the visit id to the target (link option): the enricher merges a beacon that arrived first. */
  expects_beacon: z.boolean().default(false),
  /** Issue 40: the index of the redirect rule that chose the target, and of the A/B variant; -1 for none (absent from older edges). */
  matched_rule: z.number().int().min(-1).max(127).optional(),
  variant: z.number().int().min(-1).max(127).optional(),
});
export type RawVisit = z.output<typeof RawVisitSchema>;
