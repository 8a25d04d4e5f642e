import type { FastifyInstance } from 'fastify';
import { v7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deduplicatedBy, toClickHouseTime } from '#shared/analytics/analytics.js';
import type { Context } from '#shared/context.js';
import { closeContext, createTestContext } from '#tests/support/context.js';
import { claimSubdomain, createOwner, type TestOwner } from '#tests/support/owners.js';
import { buildApp } from '#services/app.js';

// A link's statistics by redirect rule and by A/B variant (issue 40): the owner's report of a link
// carries `routes` (visits and unique visitors per rule and variant index, each labelled with what it
// is now); a public report narrowed to a link carries indexes and counts only, under the policy.
// Visits are written to `visits` as the enricher writes them, with `matched_rule` and `variant`.

type Json = Record<string, any>;

let context: Context;
let app: FastifyInstance;
let alice: TestOwner;
let bob: TestOwner;
let sub: string;
let link: Json;

const HOUR = 3_600_000;
const base = Date.now() - 30 * HOUR;
const RULE_TARGETS = ['https://rule-target.example/iphone', 'https://rule-target.example/de'];
const VARIANT_TARGETS = ['https://variant-target.example/a', 'https://variant-target.example/b', 'https://variant-target.example/c'];

/** [matched_rule, variant, visitor, country, kind] of each visit. */
const VISITS: [number, number, string, string, 'visit' | 'bot'][] = [
  [0, -1, 'v1', 'US', 'visit'],
  [0, -1, 'v2', 'US', 'visit'],
  [0, -1, 'v1', 'US', 'visit'],
  [1, -1, 'v3', 'DE', 'visit'],
  [-1, 0, 'v4', 'FR', 'visit'],
  [-1, 0, 'v5', 'FR', 'visit'],
  [-1, 1, 'v6', 'FR', 'visit'],
  [-1, 2, 'v7', 'DE', 'visit'],
  // A bot is no visit of a person: counted apart in the totals, never here.
  [-1, 2, 'b1', 'DE', 'bot'],
];

beforeAll(async () => {
  context = await createTestContext({ RATE_LIMIT_API: '100000:60' });
  ({ app } = await buildApp(context));
  alice = await createOwner(context, app);
  bob = await createOwner(context, app);
  sub = await claimSubdomain(app, alice, { stats_public: true, stats_show_links: true });
  const created = await app.inject({
    method: 'POST',
    url: '/api/v1/links',
    headers: alice.auth,
    payload: {
      subdomain: sub,
      slug: 'split',
      target_url: 'https://example.com/default',
      rules: [
        { condition: { type: 'device', values: ['mobile'] }, target_url: RULE_TARGETS[0] },
        { condition: { type: 'country', values: ['DE'] }, target_url: RULE_TARGETS[1] },
      ],
      variants: VARIANT_TARGETS.map((target_url, i) => ({ target_url, weight: i + 1 })),
    },
  });
  expect(created.statusCode, created.body).toBe(201);
  link = created.json().data;
  const rows = VISITS.map(([matched_rule, variant, visitor, country, kind], i) => ({
    visit_id: v7({ msecs: base + i * 60_000 }),
    ts: toClickHouseTime(base + i * 60_000),
    kind,
    owner_id: alice.id,
    subdomain: sub,
    link_id: link.id,
    slug: 'split',
    country,
    visitor_hash: visitor,
    is_bot: kind === 'bot' ? 1 : 0,
    matched_rule,
    variant,
  }));
  await context.analytics.client.insert({ table: 'visits', values: rows, format: 'JSONEachRow', clickhouse_settings: deduplicatedBy(`routes-${sub}`) });
}, 120_000);

afterAll(async () => {
  await app?.close();
  await closeContext(context);
});

const since = new Date(base - HOUR).toISOString();
const owned = (query = '') => app.inject({ method: 'GET', url: `/api/v1/stats/link/${link.id}?since=${since}${query}`, headers: alice.auth });

describe("a link's statistics by redirect rule and by A/B variant", () => {
  it('counts human visits and unique visitors per rule and per variant, -1 for none, each index labelled with what it is now', async () => {
    const answer = await owned();
    expect(answer.statusCode, answer.body).toBe(200);
    const { routes, totals } = answer.json().data;
    expect(totals.visits).toBe(8);
    expect(routes.rules).toEqual([
      { index: -1, visits: 4, unique_visitors: 4, condition: null, target_url: null },
      { index: 0, visits: 3, unique_visitors: 2, condition: { type: 'device', values: ['mobile'] }, target_url: RULE_TARGETS[0] },
      { index: 1, visits: 1, unique_visitors: 1, condition: { type: 'country', values: ['DE'] }, target_url: RULE_TARGETS[1] },
    ]);
    expect(routes.variants).toEqual([
      { index: -1, visits: 4, unique_visitors: 3, target_url: null, weight: null },
      { index: 0, visits: 2, unique_visitors: 2, target_url: VARIANT_TARGETS[0], weight: 1 },
      { index: 1, visits: 1, unique_visitors: 1, target_url: VARIANT_TARGETS[1], weight: 2 },
      { index: 2, visits: 1, unique_visitors: 1, target_url: VARIANT_TARGETS[2], weight: 3 },
    ]);
  });

  it("narrows them with the report's filters, and labels an index the link no longer has as null", async () => {
    const german = (await owned('&country=DE')).json().data.routes;
    expect(german.rules).toEqual([
      { index: -1, visits: 1, unique_visitors: 1, condition: null, target_url: null },
      { index: 1, visits: 1, unique_visitors: 1, condition: { type: 'country', values: ['DE'] }, target_url: RULE_TARGETS[1] },
    ]);
    const patched = await app.inject({ method: 'PATCH', url: `/api/v1/links/${link.id}`, headers: alice.auth, payload: { rules: [] } });
    expect(patched.statusCode, patched.body).toBe(200);
    const after = (await owned()).json().data.routes;
    expect(after.rules.find((item: Json) => item.index === 0)).toEqual({ index: 0, visits: 3, unique_visitors: 2, condition: null, target_url: null });
    await app.inject({
      method: 'PATCH',
      url: `/api/v1/links/${link.id}`,
      headers: alice.auth,
      payload: { rules: link.rules },
    });
  });

  it("is in no subdomain report, and refuses another owner's link (403 not_owner)", async () => {
    const subdomainReport = await app.inject({ method: 'GET', url: `/api/v1/stats/subdomain/${sub}?since=${since}`, headers: alice.auth });
    expect(subdomainReport.statusCode).toBe(200);
    expect(subdomainReport.json().data).not.toHaveProperty('routes');
    const refused = await app.inject({ method: 'GET', url: `/api/v1/stats/link/${link.id}`, headers: bob.auth });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.code).toBe('not_owner');
  });

  it('shows the public, narrowed to the link with stats_show_links, indexes and counts only: never a target or a condition', async () => {
    const open = await app.inject({ method: 'GET', url: `/api/v1/stats?subdomain=${sub}&since=${since}&link=split`, remoteAddress: '198.18.0.9' });
    expect(open.statusCode, open.body).toBe(200);
    const { routes } = open.json().data;
    expect(routes.rules).toEqual([
      { index: -1, visits: 4, unique_visitors: 4 },
      { index: 0, visits: 3, unique_visitors: 2 },
      { index: 1, visits: 1, unique_visitors: 1 },
    ]);
    expect(routes.variants.map((item: Json) => Object.keys(item).sort())).toEqual(Array(4).fill(['index', 'unique_visitors', 'visits']));
    for (const secret of [...RULE_TARGETS, ...VARIANT_TARGETS, 'mobile', 'example.com/default']) expect(open.body).not.toContain(secret);
    // Without the link filter, or with links hidden: no routes.
    const whole = await app.inject({ method: 'GET', url: `/api/v1/stats?subdomain=${sub}&since=${since}`, remoteAddress: '198.18.0.9' });
    expect(whole.json().data).not.toHaveProperty('routes');
    await app.inject({ method: 'PATCH', url: `/api/v1/subdomains/${sub}`, headers: alice.auth, payload: { stats_show_links: false } });
    const hidden = await app.inject({ method: 'GET', url: `/api/v1/stats?subdomain=${sub}&since=${since}&link=split`, remoteAddress: '198.18.0.9' });
    expect(hidden.statusCode).toBe(200);
    expect(hidden.json().data).not.toHaveProperty('routes');
    expect(hidden.body).not.toContain('split');
    await app.inject({ method: 'PATCH', url: `/api/v1/subdomains/${sub}`, headers: alice.auth, payload: { stats_show_links: true } });
  });
});
