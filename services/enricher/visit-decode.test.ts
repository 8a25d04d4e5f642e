import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type z } from 'zod';
import { RawVisitSchema, VISIT_TEXT_MAX } from '#shared/visits/raw-visit.js';
import { compiledRawVisitSchema, decodeVisit } from './visit-consumer.js';

const VALID = {
  visit_id: '01928f3c-7a6b-7c3d-9e4f-0a1b2c3d4e5f',
  ts: '2025-03-04T05:06:07.089Z',
  kind: 'visit',
  owner_id: 'owner-1',
  subdomain: 'acme',
  link_id: 'link-1',
  slug: 'promo',
  ip_public: '203.0.113.7',
  user_agent: 'Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0',
  referrer: 'https://example.org/',
  accept_language: 'en',
  query: 'utm_source=x',
  expects_beacon: false,
};

/** Text of a length around `max` (either side of the bound), or a short one with awkward characters. */
const textNear = (max: number) =>
  fc.oneof(
    fc.nat({ max: 3 }).map((extra) => 'a'.repeat(Math.max(0, max - 1 + extra))),
    fc.string({ maxLength: 12, unit: 'binary' }),
    fc.constantFrom('', '\u0000', 'a\u0000b', '\ud800', '\udc00x', '🚀'),
  );

/** Values a field may hold in a record off the log: valid ones, boundary ones, and wrong types. */
const fieldValues: Record<keyof typeof VALID, fc.Arbitrary<unknown>> = {
  visit_id: fc.oneof(
    fc.uuid(),
    fc.constantFrom(
      '00000000-0000-0000-0000-000000000000',
      'ffffffff-ffff-ffff-ffff-ffffffffffff',
      '01928F3C-7A6B-7C3D-9E4F-0A1B2C3D4E5F',
      '01928f3c-7a6b-0c3d-9e4f-0a1b2c3d4e5f',
      '01928f3c-7a6b-7c3d-1e4f-0a1b2c3d4e5f',
      '01928f3c7a6b7c3d9e4f0a1b2c3d4e5f',
      '',
    ),
    fc.string(),
  ),
  ts: fc.oneof(
    fc.date({ min: new Date(Date.UTC(1850, 0, 1)), max: new Date(Date.UTC(2350, 0, 1)), noInvalidDate: true }).map((date) => date.toISOString()),
    fc.constantFrom(
      '2025-03-04T05:06:07Z',
      '2025-03-04T05:06:07+02:00',
      '2025-03-04T05:06:07.1-23:59',
      '2025-03-04T05:06Z',
      '2025-03-04 05:06:07Z',
      '2025-03-04T05:06:07',
      '2024-02-29T00:00:00Z',
      '2025-02-29T00:00:00Z',
      '1900-01-01T00:00:00Z',
      '1900-01-01T00:30:00+01:00',
      '2299-12-31T23:59:59.999Z',
      '2299-12-31T23:30:00-01:00',
      '0000-01-01T00:00:00Z',
      '2025-03-04T24:00:00Z',
    ),
  ),
  kind: fc.constantFrom('visit', 'bot', 'attack', 'beacon', 'Visit', '', undefined),
  owner_id: textNear(64),
  subdomain: fc.oneof(textNear(63), fc.constant('')),
  link_id: fc.oneof(textNear(64), fc.constant(undefined)),
  slug: fc.oneof(textNear(200), fc.constant(undefined)),
  ip_public: fc.oneof(textNear(45), fc.ipV4(), fc.ipV6()),
  user_agent: fc.oneof(textNear(VISIT_TEXT_MAX.user_agent), fc.constant(undefined)),
  referrer: fc.oneof(textNear(VISIT_TEXT_MAX.referrer), fc.constant(undefined)),
  accept_language: fc.oneof(textNear(VISIT_TEXT_MAX.accept_language), fc.constant(undefined)),
  query: fc.oneof(textNear(VISIT_TEXT_MAX.query), fc.constant(undefined)),
  expects_beacon: fc.constantFrom(true, false, undefined, 'true', 0),
};

/** A value of the wrong type for any field. */
const wrongType = fc.oneof(fc.constant(null), fc.integer(), fc.boolean(), fc.constant([]), fc.constant({}), fc.double());

/** Records off the log: a valid visit with some fields replaced, left out, of the wrong type, or extra keys. */
const records = fc.oneof(
  { weight: 8, arbitrary: fc.record(fieldValues, { requiredKeys: [] }).map((fields) => ({ ...VALID, ...fields })) },
  {
    weight: 4,
    arbitrary: fc
      .tuple(
        fc.constantFrom(...(Object.keys(VALID) as (keyof typeof VALID)[])),
        fc.oneof(wrongType, fc.constant(undefined)),
        fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 2 }),
      )
      .map(([field, value, extra]) => {
        const record: Record<string, unknown> = { ...extra, ...VALID };
        if (value === undefined) delete record[field];
        else record[field] = value;
        return record;
      }),
  },
  { weight: 1, arbitrary: fc.oneof(wrongType, fc.string(), fc.jsonValue()) },
);

/** What a parse tells: the output, or each issue's path, code and message. */
const outcomeOf = (result: z.ZodSafeParseResult<unknown>) =>
  result.success ? { data: result.data } : { issues: result.error.issues.map(({ path, code, message }) => ({ path, code, message })) };

describe('the compiled visit schema', () => {
  it('is compiled: a parser of its own, not the runtime schema', () => {
    expect(compiledRawVisitSchema).not.toBe(RawVisitSchema);
    expect(compiledRawVisitSchema.safeParse(VALID)).toEqual({ success: true, data: VALID });
  });

  it('accepts, outputs and refuses exactly what zod does, with the same issues', () => {
    const compiled = compiledRawVisitSchema;
    let accepted = 0;
    let refused = 0;
    fc.assert(
      fc.property(records, (record) => {
        // Records come off the log as JSON text: undefined fields vanish, as they do there.
        const input: unknown = JSON.parse(JSON.stringify(record) ?? 'null');
        const expected = outcomeOf(RawVisitSchema.safeParse(input));
        expect(outcomeOf(compiled.safeParse(input))).toEqual(expected);
        if ('data' in expected) accepted++;
        else refused++;
      }),
      { numRuns: 3000 },
    );
    // Both sides of the boundary were tried, not only one.
    expect(accepted).toBeGreaterThan(100);
    expect(refused).toBeGreaterThan(100);
  });

  it('a record the compiled parser refuses goes to the dead-letter topic with the runtime issues as its reason', () => {
    const message = { key: 'link-1', value: JSON.stringify({ ...VALID, ts: '0000-01-01T00:00:00Z', subdomain: '' }) };
    expect(decodeVisit(message)).toEqual({
      kind: 'dlq',
      message,
      reason: 'invalid visit: ts: outside 1900-01-01T00:00:00Z … 2299-12-31T23:59:59.999Z; subdomain: Too small: expected string to have >=1 characters',
    });
  });

  it('an accepted record is a new object with only the schema fields, defaults filled', () => {
    const input = { ...VALID, extra: 'dropped', link_id: undefined, kind: undefined };
    expect(decodeVisit({ key: 'k', value: JSON.stringify(input) })).toEqual({ kind: 'ok', visit: { ...VALID, kind: 'visit', link_id: '' } });
  });
});
