import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '../context.js';
import { toClickHouseTime } from './analytics.js';
import type { Dimension } from './rollups.js';
import { statsRepository, type Range, type Target } from './stats.repository.js';
import type { VisitFilters } from './visits.repository.js';
import { closeContext, createTestContext, uniqueName } from '#tests/support/context.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

let context: Context;
beforeAll(async () => {
  context = await createTestContext();
});
afterAll(async () => {
  await closeContext(context);
});

/** A visit as the fixture writes it, and as the expectations read it. */
interface Seeded {
  ts: number;
  kind: 'visit' | 'beacon' | 'bot' | 'attack';
  subdomain: string;
  link_id: string;
  country: string;
  city: string;
  browser: string;
  os: string;
  device_type: string;
  referrer_host: string;
  utm_source: string;
  utm_medium: string;
  utm_campaign: string;
  visitor_hash: string;
}

const pick = <T>(values: readonly T[], n: number) => values[n % values.length]!;

/** Deterministic visits over six UTC days, values spread so that pairs of filters cut them differently. */
function fixture(subdomain: string, start: number, count: number): Seeded[] {
  return Array.from({ length: count }, (_, i) => {
    const n = (i * 2_654_435_761) >>> 0;
    return {
      ts: start + (n % (6 * DAY)),
      kind: pick(['visit', 'visit', 'visit', 'beacon', 'bot', 'attack'] as const, i),
      subdomain,
      link_id: pick(['link-a', 'link-b', 'link-c'], i >> 1),
      country: pick(['FR', 'DE', 'US', ''], i >> 2),
      city: pick(['Paris', 'Lyon', ''], i),
      browser: pick(['Firefox', 'Chrome', 'Safari'], i >> 3),
      os: pick(['Linux', 'iOS'], i >> 1),
      device_type: pick(['desktop', 'mobile'], i >> 4),
      referrer_host: pick(['t.co', '', 'news.example'], i >> 2),
      utm_source: pick(['', 'newsletter'], i >> 3),
      utm_medium: pick(['', 'email', 'social'], i),
      utm_campaign: pick(['', 'spring', 'autumn "sale"'], i >> 5),
      visitor_hash: `h${i % 97}`,
    };
  });
}

async function insert(ownerId: string, visits: Seeded[]) {
  await context.analytics.client.insert({
    table: 'visits',
    format: 'JSONEachRow',
    values: visits.map((visit) => ({
      ...visit,
      visit_id: uuidv7(),
      ts: toClickHouseTime(visit.ts),
      owner_id: ownerId,
      slug: 's',
      ip_public: '203.0.113.9',
      is_bot: visit.kind === 'bot' ? 1 : 0,
      is_attack: visit.kind === 'attack' ? 1 : 0,
    })),
  });
}

const FILTER_COLUMNS: Record<string, keyof Seeded> = {
  country: 'country',
  browser: 'browser',
  os: 'os',
  device: 'device_type',
  referrer_host: 'referrer_host',
  utm_source: 'utm_source',
  utm_medium: 'utm_medium',
  utm_campaign: 'utm_campaign',
  link_id: 'link_id',
  kind: 'kind',
};
const matches = (visit: Seeded, filters: VisitFilters) =>
  Object.entries(filters).every(([filter, value]) => (filter === 'is_bot' ? (visit.kind === 'bot') === value : visit[FILTER_COLUMNS[filter]!] === value));
const human = (visit: Seeded) => visit.kind === 'visit' || visit.kind === 'beacon';

/** The period of the range a moment (ms) falls in, as its local date (and hour) in the range's zone: how the test names a series point. */
const periodOf = (ms: number, range: Range) =>
  new Intl.DateTimeFormat('en-CA', {
    timeZone: range.tz,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    ...(range.granularity === 'hour' ? { hour: '2-digit', hourCycle: 'h23' } : {}),
  }).format(ms);

/** What a report of these visits must say, computed here from the fixture. */
function expected(visits: Seeded[], range: Range, filters: VisitFilters) {
  const inRange = visits.filter((visit) => visit.ts >= range.since * 1000 && visit.ts < range.until * 1000 && matches(visit, filters));
  const people = inRange.filter(human);
  const byPeriod = new Map<string, number>();
  for (const visit of people) byPeriod.set(periodOf(visit.ts, range), (byPeriod.get(periodOf(visit.ts, range)) ?? 0) + 1);
  const breakdown = (value: (visit: Seeded) => string) => {
    const counts = new Map<string, number>();
    for (const visit of people) counts.set(value(visit), (counts.get(value(visit)) ?? 0) + 1);
    return [...counts].map(([v, n]) => ({ value: v, visits: n })).sort((a, b) => b.visits - a.visits || (a.value < b.value ? -1 : 1));
  };
  return {
    totals: {
      human: people.length,
      visitors: new Set(people.map((visit) => visit.visitor_hash)).size,
      bots: inRange.filter((visit) => visit.kind === 'bot').length,
      attacks: inRange.filter((visit) => visit.kind === 'attack').length,
    },
    byPeriod: [...byPeriod].sort(([a], [b]) => (a < b ? -1 : 1)),
    top: {
      country: breakdown((visit) => visit.country),
      city: breakdown((visit) => (visit.city === '' ? '' : `${visit.country}|${visit.city}`)),
      browser: breakdown((visit) => visit.browser),
      referrer_host: breakdown((visit) => visit.referrer_host),
      link: breakdown((visit) => visit.link_id),
    } as Partial<Record<Dimension, { value: string; visits: number }[]>>,
  };
}

describe('filtered reports (the daily cube for whole UTC days, its quarter hours or `visits` for the rest)', () => {
  const ownerId = uniqueName('cube-owner');
  const subdomain = uniqueName('cube');
  // Six UTC days ending before the current one; the ranges cut into their first and last.
  const start = Math.floor(Date.now() / DAY) * DAY - 7 * DAY;
  const visits = fixture(subdomain, start, 3_000);
  const target: Target = { ownerId, scope: 'subdomain', id: subdomain, subdomain };
  const ranges: [string, Range][] = [
    ['partial days at both edges', { since: (start + 5 * HOUR) / 1000, until: (start + 5 * DAY + 7 * HOUR) / 1000, tz: 'UTC', granularity: 'day' }],
    ['whole days only', { since: (start + DAY) / 1000, until: (start + 4 * DAY) / 1000, tz: 'UTC', granularity: 'day' }],
    ['within one day', { since: (start + 2 * DAY + HOUR) / 1000, until: (start + 2 * DAY + 20 * HOUR) / 1000, tz: 'UTC', granularity: 'day' }],
    // Older than the quarter-hour cube keeps: the edges come from `visits`.
    [
      'an edge older than the quarter hours reach',
      { since: (start + 5 * HOUR - 120 * DAY) / 1000, until: (start + 5 * DAY + 7 * HOUR) / 1000, tz: 'UTC', granularity: 'day' },
    ],
    ['by hour in Asia/Kolkata', { since: (start + 5 * HOUR) / 1000, until: (start + 5 * DAY + 7 * HOUR) / 1000, tz: 'Asia/Kolkata', granularity: 'hour' }],
    [
      'by day in America/New_York, older than the quarter hours reach',
      { since: (start - 120 * DAY) / 1000, until: (start + 3 * DAY + 7 * HOUR) / 1000, tz: 'America/New_York', granularity: 'day' },
    ],
  ];
  const filterSets: VisitFilters[] = [
    { country: 'FR' },
    { country: 'DE', browser: 'Firefox' },
    { referrer_host: '', utm_source: 'newsletter' },
    { utm_campaign: 'autumn "sale"', device: 'mobile' },
    { link_id: 'link-b', os: 'iOS', utm_medium: 'email' },
    { kind: 'bot' },
    { is_bot: false, country: 'US' },
  ];

  beforeAll(async () => {
    await insert(ownerId, visits);
    // Another owner's rows under the same subdomain name (a name released and claimed again) never count.
    await insert(uniqueName('cube-other'), fixture(subdomain, start, 500));
  });

  for (const [name, range] of ranges) {
    it(`agrees with the visits themselves, ${name}, for each set of filters`, async () => {
      const stats = statsRepository(context.analytics);
      for (const filters of filterSets) {
        const want = expected(visits, range, filters);
        // As the service asks (days in UTC: `daily`), and for days in UTC also without it (every period from the quarter hours, or `visits`).
        const utcDays = range.granularity === 'day' && range.tz === 'UTC';
        const reads = await Promise.all([
          stats.filteredByPeriod(target, range, filters, utcDays),
          ...(utcDays ? [stats.filteredByPeriod(target, range, filters, false)] : []),
        ]);
        for (const rows of reads) {
          // No row matched: no totals row either (the service reads that as zeros).
          const whole = rows.find((row) => Number(row.whole) === 1);
          const totals = {
            human: Number(whole?.human ?? 0),
            visitors: Number(whole?.distinct_visitors ?? 0),
            bots: Number(whole?.bot_visits ?? 0),
            attacks: Number(whole?.attack_visits ?? 0),
          };
          expect([filters, totals]).toEqual([filters, want.totals]);
          const periods = rows
            .filter((row) => Number(row.whole) === 0 && Number(row.human) > 0)
            .map((row) => [periodOf(Number(row.t) * 1000, range), Number(row.human)])
            .sort(([a], [b]) => (a! < b! ? -1 : 1));
          expect([filters, periods]).toEqual([filters, want.byPeriod]);
        }
        const dims: Dimension[] = ['country', 'city', 'browser', 'referrer_host', 'link'];
        const found = await stats.filteredBreakdowns(target, range, filters, dims, 100, []);
        for (const dim of dims) {
          const rows = found.filter((row) => row.dim === dim).map((row) => ({ value: row.value, visits: Number(row.visits) }));
          expect([filters, dim, rows]).toEqual([filters, dim, want.top[dim]]);
        }
      }
    });
  }

  it('keeps counting the visits that retention or an erasure deleted, as the other rollups do, but where it reads `visits`', async () => {
    const stats = statsRepository(context.analytics);
    const range = ranges[0]![1];
    const before = await stats.filteredByPeriod(target, range, { country: 'FR' }, true);
    expect(before.find((row) => Number(row.t) === (start + 2 * DAY) / 1000)?.human).toBeGreaterThan(0);
    const erasedDay = start + 2 * DAY;
    await context.analytics.client.command({
      query: `ALTER TABLE visits DELETE WHERE owner_id = {owner:String} AND ts >= fromUnixTimestamp64Milli({from:Int64}) AND ts < fromUnixTimestamp64Milli({to:Int64})`,
      query_params: { owner: ownerId, from: erasedDay, to: erasedDay + DAY },
      clickhouse_settings: { mutations_sync: '2' },
    });
    const after = await stats.filteredByPeriod(target, range, { country: 'FR' }, true);
    expect(after).toEqual(before);
    // The quarter hours (a series by hour) keep them too.
    const hourly = await stats.filteredByPeriod(target, { ...range, granularity: 'hour' }, { country: 'FR' }, false);
    expect(hourly.filter((row) => Number(row.t) >= erasedDay / 1000 && Number(row.t) < (erasedDay + DAY) / 1000).length).toBeGreaterThan(0);
    // A range older than the quarter hours reach reads its edges from `visits`: there the deleted visits are gone.
    const old = await stats.filteredByPeriod(
      target,
      { since: (start - 120 * DAY) / 1000, until: (erasedDay + 20 * HOUR) / 1000, tz: 'UTC', granularity: 'day' },
      { country: 'FR' },
      true,
    );
    expect(old.find((row) => Number(row.t) === erasedDay / 1000)).toBeUndefined();
    expect(old.find((row) => Number(row.t) === (erasedDay - DAY) / 1000)?.human).toBeGreaterThan(0);
  });
});
