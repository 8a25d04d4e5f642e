import { z } from 'zod';
import { rule } from '../i18n/index.js';

/**
 * Field rules shared by the route declarations, written so that the OpenAPI document states them
 * exactly (one `pattern`, lengths on the text as sent).
 */

/** Text with at least one visible character (stored trimmed): at most `max` characters as sent, no NUL. */
export function textField(max: number) {
  return z.string().max(max).regex(NOT_BLANK, 'must not be blank').trim();
}

/** At least one visible character, and no NUL (the rule of every string, stated in the same pattern). */
// eslint-disable-next-line no-control-regex -- NUL is the character refused
export const NOT_BLANK = /^[^\u0000]*[^\s\u0000][^\u0000]*$/;

/**
 * What Postgres and ClickHouse cannot store: NUL, and UTF-16 surrogates without their pair (JSON's
 * `\ud800` escapes; they would be stored as U+FFFD). Refused in every string of a request
 * (shared/http/register.ts); the OpenAPI document states it as each free-text string's `pattern`.
 */
// eslint-disable-next-line no-control-regex -- NUL is the character refused
export const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const UNSTORABLE_ALL = new RegExp(UNSTORABLE.source, 'g');

/** The text with what UNSTORABLE matches shown as U+FFFD (text read from elsewhere, to store or to answer). */
export const withoutUnstorable = (text: string): string => text.replace(UNSTORABLE_ALL, '\uFFFD');

/** The document's statement of UNSTORABLE for strings without a pattern of their own. */
export const STORABLE_TEXT_PATTERN = '^[^\\u0000]*$';

/**
 * Instants a request may name: RFC 3339 with seconds, Z or an offset, years 1970 to 9999, as one
 * pattern without lookarounds (the document states it as is; generators cannot draw lookarounds).
 * A day past its month's end rolls over (2026-02-30 is 2026-03-02), as Date.parse reads it.
 */
const DATE_TIME =
  /^(?:19[7-9][0-9]|[2-9][0-9]{3})-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,9})?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])$/;

/** An instant of a request, ISO 8601 / RFC 3339 (DATE_TIME). */
export function dateTimeField() {
  return z.string().regex(DATE_TIME, 'must be an ISO 8601 instant with seconds and Z or an offset (e.g. 2026-05-01T12:00:00Z), years 1970 to 9999');
}

/** What an integer query parameter may be: decimal digits and nothing else. */
const DECIMAL_DIGITS = /^[0-9]+$/;

/**
 * An integer query parameter from `min` to `max`, documented as `type: integer`. Only decimal digits
 * are read: zod's coercion alone (Number()) would also take `0x10` as 16, ` 5` as 5, `1e1` as 10 and
 * an empty value or null as 0, none of which is an integer as the document states it; they answer 422
 * `validation_error`. (Refusing null also keeps the document from declaring the parameter nullable:
 * the generator asks the schema whether it takes null.)
 */
export function integerParam(min: number, max: number) {
  return z.preprocess((value, context) => {
    if (typeof value === 'number' || (typeof value === 'string' && DECIMAL_DIGITS.test(value))) return value;
    context.addIssue({ code: 'custom', message: rule('decimal_integer'), input: value });
    return z.NEVER;
  }, z.coerce.number().int().min(min).max(max));
}
