import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { v7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '#services/app.js';
import { deduplicatedBy, toClickHouseTime } from '#shared/analytics/analytics.js';
import type { Context } from '#shared/context.js';
import { closeContext, createTestContext } from './support/context.js';
import { claimSubdomain, createOwner, type TestOwner } from './support/owners.js';
import { createTeam, joinTeam } from './support/teams.js';
import { POLICY_SWITCHES, type PolicySwitch } from '#shared/policy/policy.js';

/*
 * Every public read, under every combination of the ten switches (2^10), with publish delays and
 * item caps drawn by fast-check: no response may carry a hidden field or value, an item younger
 * than the delay, or more items than the cap.
 */

type Json = Record<string, any>;

let context: Context;
let app: FastifyInstance;
let owner: TestOwner;
let sub: string;
let linkIds: string[];
/** Who sets the policy: the subdomain's owner, or on a team's subdomain another admin of the team. */
let patcher: TestOwner;
/** Ids and addresses no public read may show besides the links' and the owner's (a team's, its members'). */
let alsoHidden: string[] = [];

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
/** Values of the fixture that only a switch may reveal, by the switch. */
const SECRETS: Partial<Record<PolicySwitch, string[]>> = {
  stats_show_ip: ['203.0.113.77'],
  stats_show_internal_ip: ['10.9.8.7'],
  stats_show_geo: ['Lyon', 'Auvergne'],
  stats_show_ua: ['PolicyProbe/9.9', 'Vivaldi'],
  stats_show_referrer: ['referrer.example', 'utm-probe-source'],
  stats_show_links: ['probe-link-', 'https://target.example/'],
  // The path an attack attempt asked for: text any visitor chooses (issue 34).
  stats_show_attack_paths: ['FREE-BITCOIN-probe'],
};
/** Text no public read may show under any policy: the targets of the fixture's redirect rules and A/B variants. */
const NEVER_PUBLIC = ['rule-target-probe.example', 'variant-target-probe.example'];
/** Visit ages (the fixture's spread): a minute to four days. */
const AGES = [MINUTE, 30 * MINUTE, 3 * HOUR, 26 * HOUR, 50 * HOUR, 98 * HOUR];
/** Publish delays drawn: none, and delays that fall between the fixture's ages. */
const DELAYS = [0, 10 * 60, 2 * 3600, 24 * 3600, 48 * 3600, 96 * 3600];

/** Public columns of a visit (v1) and their legacy (v0) names, per switch. */
const VISIT_FIELDS: Record<string, PolicySwitch | 'always'> = {
  ts: 'always',
  kind: 'always',
  ip_public: 'stats_show_ip',
  ip_lan: 'stats_show_internal_ip',
  country: 'stats_show_geo',
  region: 'stats_show_geo',
  city: 'stats_show_geo',
  // latitude and longitude: under no switch (the geo switch publishes country, region and city only).
  user_agent: 'stats_show_ua',
  browser: 'stats_show_ua',
  browser_version: 'stats_show_ua',
  os: 'stats_show_ua',
  os_version: 'stats_show_ua',
  device_type: 'stats_show_ua',
  referrer: 'stats_show_referrer',
  referrer_host: 'stats_show_referrer',
  slug: 'stats_show_links',
};
const LEGACY_FIELDS: Record<string, PolicySwitch | 'always'> = {
  time: 'always',
  kind: 'always',
  ip: 'stats_show_ip',
  country: 'stats_show_geo',
  city: 'stats_show_geo',
  user_agent: 'stats_show_ua',
  browser: 'stats_show_ua',
  os: 'stats_show_ua',
  referrer: 'stats_show_referrer',
  page: 'stats_show_links',
};
const DIMENSION_SWITCH: Record<string, PolicySwitch> = {
  country: 'stats_show_geo',
  city: 'stats_show_geo',
  browser: 'stats_show_ua',
  os: 'stats_show_ua',
  device_type: 'stats_show_ua',
  referrer_host: 'stats_show_referrer',
  utm_source: 'stats_show_referrer',
  link: 'stats_show_links',
};

beforeAll(async () => {
  context = await createTestContext({ RATE_LIMIT_API: '1000000:60', RATE_LIMIT_DEFAULT: '1000000:60', SMTP_URL: undefined });
  ({ app } = await buildApp(context));
  owner = await createOwner(context, app);
  patcher = owner;
  await setUpFixture(await claimSubdomain(app, owner));
}, 60_000);

/** The fixture on subdomain `name` of `owner`: a link per age, and a visit, a bot and an attack per link. */
async function setUpFixture(name: string) {
  sub = name;
  linkIds = [];
  // A link per age, backdated so that delays publish some of them and not others.
  for (const [index, age] of AGES.entries()) {
    const created = await app.inject({
      method: 'POST',
      url: '/api/v1/links',
      headers: owner.auth,
      payload: {
        subdomain: sub,
        slug: `probe-link-${index}`,
        target_url: `https://target.example/${index}`,
        title: `Probe ${index}`,
        // Rules and an A/B split whose targets no public read may show, whatever the policy (issue 40).
        rules: [{ condition: { type: 'query', name: 'probe' }, target_url: `https://${NEVER_PUBLIC[0]}/${index}` }],
        variants: [
          { target_url: `https://${NEVER_PUBLIC[1]}/a`, weight: 1 },
          { target_url: `https://${NEVER_PUBLIC[1]}/b`, weight: 1 },
        ],
      },
    });
    const link = created.json().data;
    linkIds.push(link.id);
    await sql`UPDATE links SET created_at = ${new Date(Date.now() - age - MINUTE)} WHERE id = ${link.id}`.execute(context.db.db);
  }
  const now = Date.now();
  const rows = AGES.flatMap((age, index) =>
    (['visit', 'bot', 'attack'] as const).map((kind, k) => ({
      visit_id: v7({ msecs: now - age - k * 1000 }),
      ts: toClickHouseTime(now - age - k * 1000),
      kind,
      owner_id: owner.id,
      subdomain: sub,
      link_id: kind === 'attack' ? '' : linkIds[index],
      slug: kind === 'attack' ? '/wp-admin/FREE-BITCOIN-probe' : `probe-link-${index}`,
      ip_public: '203.0.113.77',
      ip_lan: '10.9.8.7',
      country: 'FR',
      region: 'Auvergne-Rhone-Alpes',
      city: 'Lyon',
      latitude: 45.76,
      longitude: 4.83,
      user_agent: 'Mozilla/5.0 PolicyProbe/9.9',
      browser: 'Vivaldi',
      os: 'Linux',
      device_type: 'desktop',
      referrer: 'https://referrer.example/page',
      referrer_host: 'referrer.example',
      utm_source: 'utm-probe-source',
      is_bot: kind === 'bot' ? 1 : 0,
      is_attack: kind === 'attack' ? 1 : 0,
      visitor_hash: `p${index}`,
      matched_rule: (index % 2) - 1,
      variant: index % 2 === 0 ? index % 2 : -1,
    })),
  );
  await context.analytics.client.insert({ table: 'visits', values: rows, format: 'JSONEachRow', clickhouse_settings: deduplicatedBy(`policy-${sub}`) });
}

afterAll(async () => {
  await app?.close();
  await closeContext(context);
});

/**
 * Public reads come from an address of their own: in the services run the rate-limit counts live in
 * the Redis every test process shares, and thousands of reads from loopback would use up the api
 * bucket of the other files' anonymous requests.
 */
const READER = '198.18.0.7';
const get = async (url: string) => {
  const response = await app.inject({ method: 'GET', url, remoteAddress: READER });
  return { status: response.statusCode, body: response.json<Json>(), text: response.body };
};

type Policy = Record<PolicySwitch, boolean> & { stats_publish_delay_sec: number; stats_max_items: number };

/** Checks every public read of the fixture's subdomain under `policy`. */
async function checkPublicReads(policy: Policy) {
  const patched = await app.inject({ method: 'PATCH', url: `/api/v1/subdomains/${sub}`, headers: patcher.auth, payload: policy });
  expect(patched.statusCode, patched.body).toBe(200);
  const published = Date.now() - policy.stats_publish_delay_sec * 1000;
  const max = policy.stats_max_items;
  const label = JSON.stringify(policy);
  const on = (gate: PolicySwitch | 'always') => gate === 'always' || policy[gate];

  /** No hidden value anywhere in the text; never an id or the owner's e-mail. */
  const noSecrets = (text: string, where: string) => {
    for (const [gate, values] of Object.entries(SECRETS) as [PolicySwitch, string[]][]) {
      if (on(gate)) continue;
      for (const value of values) expect(text.includes(value), `${where} shows ${value} (${gate} off) under ${label}`).toBe(false);
    }
    for (const value of [...linkIds, owner.id, owner.email, ...alsoHidden, ...NEVER_PUBLIC])
      expect(text.includes(value), `${where} shows ${value} under ${label}`).toBe(false);
  };
  const fieldsAllowed = (items: Json[], fields: Record<string, PolicySwitch | 'always'>, where: string) => {
    for (const item of items) {
      for (const key of Object.keys(item)) {
        // An attack attempt's slug is the path it asked for: its own switch, not stats_show_links.
        const gate = (key === 'slug' || key === 'page') && item.kind === 'attack' ? 'stats_show_attack_paths' : fields[key];
        expect(key in fields && on(gate!), `${where} has ${key} under ${label}`).toBe(true);
      }
    }
  };
  const oldEnough = (times: string[], where: string) => {
    for (const time of times) expect(Date.parse(time), `${where} item at ${time} under ${label}`).toBeLessThanOrEqual(published);
  };

  // Statistics, over a fixed range (the filtered read below must count the very same quarter hours).
  const until = Math.floor(published / (15 * MINUTE)) * 15 * MINUTE;
  const range = `since=${encodeURIComponent(new Date(until - 5 * 24 * HOUR).toISOString())}&until=${encodeURIComponent(new Date(until).toISOString())}`;
  const stats = await get(`/api/v1/stats?subdomain=${sub}&granularity=hour&${range}`);
  if (!policy.stats_public) expect(stats.status, label).toBe(403);
  else {
    expect(stats.status, label).toBe(200);
    noSecrets(stats.text, 'stats');
    const report = stats.body.data;
    expect(Date.parse(report.range.until)).toBeLessThanOrEqual(published);
    expect(report, `stats of the whole subdomain carry no routes under ${label}`).not.toHaveProperty('routes');
    expect(report.series.length).toBeLessThanOrEqual(max);
    for (const [dimension, items] of Object.entries<Json[]>(report.top)) {
      expect(policy[DIMENSION_SWITCH[dimension]!], `stats top.${dimension} under ${label}`).toBe(true);
      expect(items.length).toBeLessThanOrEqual(max);
    }
    const expectedVisits = AGES.filter((age) => Date.now() - age <= published).length;
    expect(report.totals.visits, label).toBeLessThanOrEqual(expectedVisits);
  }

  // Statistics filtered by a link (issue 41): only with stats_show_links and a link the public list
  // shows; otherwise the answer is the unfiltered one, to the byte of its data (no count leaks).
  const index = (policy.stats_max_items + policy.stats_publish_delay_sec) % AGES.length;
  const filtered = await get(`/api/v1/stats?subdomain=${sub}&granularity=hour&${range}&link=probe-link-${index}`);
  const linkPublished = Date.now() - AGES[index]! - MINUTE <= published;
  if (!policy.stats_public) expect(filtered.status, label).toBe(403);
  else if (!policy.stats_show_links || !linkPublished) expect(filtered.body.data, `link filter ignored under ${label}`).toEqual(stats.body.data);
  else {
    // The link's visits by rule and variant (issue 40): indexes and counts only, within the cap.
    const routes = filtered.body.data.routes;
    for (const items of [routes.rules, routes.variants] as Json[][]) {
      expect(items.length, label).toBeLessThanOrEqual(max);
      for (const item of items) expect(Object.keys(item).sort(), label).toEqual(['index', 'unique_visitors', 'visits']);
    }
    expect(filtered.status, label).toBe(200);
    noSecrets(filtered.text, 'stats by link');
    const report = filtered.body.data;
    expect(report.filters, label).toEqual({ link: `probe-link-${index}` });
    expect(report.totals.visits, label).toBeLessThanOrEqual(1);
    for (const [dimension, items] of Object.entries<Json[]>(report.top)) {
      expect(policy[DIMENSION_SWITCH[dimension]!], `stats by link top.${dimension} under ${label}`).toBe(true);
      expect(items.length).toBeLessThanOrEqual(max);
    }
    for (const item of report.top.link ?? []) expect(item.slug, label).toBe(`probe-link-${index}`);
  }

  // Visit list (v1).
  const visits = await get(`/api/v1/visits?subdomain=${sub}&limit=200`);
  if (!policy.stats_show_visits_list) expect(visits.status, label).toBe(403);
  else {
    expect(visits.status, label).toBe(200);
    noSecrets(visits.text, 'visits');
    const items: Json[] = visits.body.data.visits;
    expect(items.length).toBeLessThanOrEqual(max);
    expect(visits.body.meta.total).toBeLessThanOrEqual(max);
    fieldsAllowed(items, VISIT_FIELDS, 'visits');
    oldEnough(
      items.map((item) => item.ts),
      'visits',
    );
  }

  // Subdomain page payload and the public link list.
  const page = await get(`/api/v1/subdomains/${sub}`);
  expect(page.status).toBe(200);
  noSecrets(page.text.replaceAll('probe-link-', policy.stats_show_links ? 'probe-link-' : 'never'), 'page');
  const payload = page.body.data;
  expect('links' in payload, label).toBe(policy.stats_show_links);
  expect('owner' in payload, label).toBe(policy.stats_show_owner);
  if (payload.links) {
    expect(payload.links.length).toBeLessThanOrEqual(max);
    oldEnough(
      payload.links.map((link: Json) => link.created_at),
      'page links',
    );
  }
  const links = await get(`/api/v1/links?subdomain=${sub}&limit=200`);
  if (!policy.stats_show_links) expect(links.status, label).toBe(403);
  else {
    noSecrets(links.text, 'links');
    const items: Json[] = links.body.data.links;
    expect(items.length).toBeLessThanOrEqual(max);
    for (const item of items) expect(Object.keys(item).sort()).toEqual(['created_at', 'short_url', 'slug', 'title']);
    oldEnough(
      items.map((item) => item.created_at),
      'links',
    );
  }

  // Legacy v0.
  for (const path of ['visits', 'bots', 'hacks']) {
    const legacy = await get(`/api/rest.php/${path}?subdomain=${sub}&limit=200`);
    if (!policy.stats_show_visits_list) {
      expect(legacy.status, `${path} ${label}`).toBe(403);
      continue;
    }
    noSecrets(legacy.text, `legacy ${path}`);
    const items: Json[] = legacy.body.data.visits;
    expect(items.length).toBeLessThanOrEqual(max);
    fieldsAllowed(items, LEGACY_FIELDS, `legacy ${path}`);
    oldEnough(
      items.map((item) => item.time),
      `legacy ${path}`,
    );
  }
  const byIp = await get(`/api/rest.php/ip/203.0.113.77?subdomain=${sub}`);
  if (!policy.stats_show_visits_list || !policy.stats_show_ip) expect(byIp.status, label).toBe(403);
  else {
    noSecrets(byIp.text, 'legacy ip');
    expect(byIp.body.data.visits.length).toBeLessThanOrEqual(max);
    expect(byIp.body.data.total).toBeLessThanOrEqual(max);
    oldEnough(
      byIp.body.data.visits.map((item: Json) => item.time),
      'legacy ip',
    );
  }
  const counters = await get(`/api/rest.php/stats?subdomain=${sub}`);
  if (!policy.stats_public) expect(counters.status, label).toBe(403);
  else expect(Object.keys(counters.body.data).sort()).toEqual(['bots', 'hacks', 'unique_visitors', 'visits']);
}

const policyArbitrary = fc.record({
  switches: fc.integer({ min: 0, max: 2 ** POLICY_SWITCHES.length - 1 }),
  delay: fc.constantFrom(...DELAYS),
  max: fc.integer({ min: 1, max: 8 }),
});
const policyOf = ({ switches, delay, max }: { switches: number; delay: number; max: number }): Policy =>
  ({
    ...Object.fromEntries(POLICY_SWITCHES.map((name, bit) => [name, (switches & (1 << bit)) !== 0])),
    stats_publish_delay_sec: delay,
    stats_max_items: max,
  }) as Policy;

/**
 * The property over every switch combination whose number `take` admits (each once, with a delay and
 * a cap spread over them), then 64 random draws. fast-check counts examples within `numRuns`: the runs
 * are the examples plus the draws (with `numRuns: 64` alone, only the first 64 combinations ran, and
 * never one with stats_show_links).
 */
const propertyRuns = (take: (switches: number) => boolean) => async () => {
  const examples = Array.from({ length: 2 ** POLICY_SWITCHES.length }, (_, switches) => switches)
    .filter(take)
    .map((switches) => [{ switches, delay: DELAYS[switches % DELAYS.length]!, max: (switches % 7) + 1 }]) as [
    { switches: number; delay: number; max: number },
  ][];
  let runs = 0;
  await fc.assert(
    fc.asyncProperty(policyArbitrary, async (drawn) => {
      runs++;
      await checkPublicReads(policyOf(drawn));
    }),
    { examples, numRuns: examples.length + 64 },
  );
  expect(runs).toBe(examples.length + 64);
};

describe('privacy policy (property)', () => {
  it(
    'no public read shows a hidden field, a young item or more than the cap, for all 2^10 switch combinations',
    propertyRuns(() => true),
    600_000,
  );
});

describe('privacy policy (property) on a subdomain that belongs to a team', () => {
  beforeAll(async () => {
    // The team's owner invites the subdomain's owner and a second admin; the owner gives the team a new
    // subdomain, and the second admin sets its policy: the same public reads, the same rules.
    const origin = new URL(context.config.publicUrl).origin;
    const teamOwner = await createOwner(context, app);
    const admin = await createOwner(context, app);
    const teamId = await createTeam(app, origin, teamOwner, 'Policy probes');
    for (const member of [owner, admin]) await joinTeam(app, origin, teamId, teamOwner, member, 'admin');
    const name = await claimSubdomain(app, owner);
    const assigned = await app.inject({ method: 'PUT', url: `/api/v1/subdomains/${name}/team`, headers: owner.auth, payload: { team_id: teamId } });
    expect(assigned.statusCode, assigned.body).toBe(200);
    await setUpFixture(name);
    patcher = admin;
    alsoHidden = [teamId, teamOwner.id, teamOwner.email, admin.id, admin.email];
  }, 60_000);

  it(
    'no public read shows a hidden field, a young item or more than the cap, for every third switch combination, the policy set by a team admin',
    propertyRuns((switches) => switches % 3 === 0),
    600_000,
  );
});
