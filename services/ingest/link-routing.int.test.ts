// Issue 40 items 2, 3, 7: redirect rules, A/B variants and query forwarding, written through the API
// and answered by the edge's listener from its link cache (a change reaches it by the link notice).
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { closeContext, uniqueName } from '#tests/support/context.js';
import { createOwner, type TestOwner } from '#tests/support/owners.js';
import type { listenerClient } from '#tests/support/listener.js';
import { waitFor } from '#tests/support/wait.js';
import { TOPICS } from '#shared/message-log/topics.js';
import type { Consumer } from '#shared/message-log/message-log.js';
import type { RawVisit } from '#shared/visits/raw-visit.js';
import { visitRowValues, VISIT_ROW_COLUMNS } from '#shared/visits/visit-rows.js';
import { forwardQuery, MAX_RULES, routeOf, RulesSchema } from '#shared/links/rules.js';
import { startTestPlatform } from '#tests/support/platform.js';
import { openGeoLookup } from '#shared/geo.js';

let context: Context;
let app: FastifyInstance;
let ingest: ReturnType<typeof listenerClient>;
let owner: TestOwner;
let subdomain: string;
let consumer: Consumer;
const visits: RawVisit[] = [];

beforeAll(async () => {
  ({ context, app, ingest, owner, subdomain } = await startTestPlatform({ RATE_LIMIT_REDIRECT: '1000:60' }));
  consumer = await context.messageLog.consume({
    groupId: uniqueName('routing-test'),
    topic: TOPICS.visitsRaw,
    handler: async (messages) => void visits.push(...messages.map((message) => JSON.parse(message.value) as RawVisit)),
  });
});

afterAll(async () => {
  await consumer?.stop();
  await app?.close();
  await closeContext(context);
});

type Json = Record<string, any>;

const post = (payload: Json) => app.inject({ method: 'POST', url: '/api/v1/links', headers: owner.auth, payload: { subdomain, ...payload } });
async function createLink(payload: Json): Promise<Json> {
  const response = await post(payload);
  if (response.statusCode !== 201) throw new Error(`create failed: ${response.statusCode} ${response.body}`);
  return response.json().data;
}
const location = async (path: string, headers: Json = {}, remoteAddress?: string) => {
  const response = await ingest.inject({ method: 'GET', url: path, headers: { host: `${subdomain}.localhost:8080`, ...headers }, remoteAddress });
  expect(response.statusCode, response.body).toBe(302);
  return response.headers.location;
};

const IPHONE = 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1';
const WINDOWS_CHROME = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';

describe('redirect rules', () => {
  it('sends a request to the first matching rule, else to the target, and the visit records the rule', async () => {
    const link = await createLink({
      target_url: 'https://example.com/default',
      rules: [
        { condition: { type: 'query', name: 'src', value: 'print' }, target_url: 'https://example.com/print' },
        { condition: { type: 'device', values: ['mobile'] }, target_url: 'https://example.com/mobile' },
        { condition: { type: 'os', values: ['ios'] }, target_url: 'https://example.com/ios-never-reached' },
        { condition: { type: 'language', values: ['de'] }, target_url: 'https://example.com/de' },
        { condition: { type: 'browser', values: ['Chrome'] }, target_url: 'https://example.com/chrome' },
      ],
    });
    expect(link.rules).toHaveLength(5);
    expect(await location(`/${link.slug}?src=print`, { 'user-agent': IPHONE })).toBe('https://example.com/print');
    expect(await location(`/${link.slug}`, { 'user-agent': IPHONE })).toBe('https://example.com/mobile');
    expect(await location(`/${link.slug}`, { 'user-agent': WINDOWS_CHROME, 'accept-language': 'de-CH,de;q=0.9,en;q=0.5' })).toBe('https://example.com/de');
    expect(await location(`/${link.slug}`, { 'user-agent': WINDOWS_CHROME, 'accept-language': 'fr' })).toBe('https://example.com/chrome');
    expect(await location(`/${link.slug}`, { 'user-agent': 'curl/8', 'accept-language': 'fr' })).toBe('https://example.com/default');
    const recorded = await waitFor(
      () => visits.filter((entry) => entry.link_id === link.id).length === 5 && visits.filter((entry) => entry.link_id === link.id),
      10_000,
    );
    // The raw visit leaves out what no rule or variant chose (absent is -1, as the row stores it: see below).
    expect(recorded.map((entry) => entry.matched_rule)).toEqual([0, 1, 3, 4, undefined]);
    expect(recorded.every((entry) => entry.variant === undefined)).toBe(true);
  });

  it('a time window in UTC, spanning midnight when `to` is before `from`', () => {
    const link = {
      id: 'l_x',
      target_url: 'https://example.com/',
      variants: null,
      forward_query: false,
      rules: [{ condition: { type: 'time' as const, from: '22:00', to: '06:00' }, target_url: 'https://example.com/night' }],
    };
    const at = (iso: string) => routeOf(link, { at: Date.parse(iso), ip: '1.2.3.4', userAgent: '', acceptLanguage: '', query: '' }, () => undefined);
    expect(at('2026-11-28T23:30:00Z').rule).toBe(0);
    expect(at('2026-11-28T05:59:00Z').rule).toBe(0);
    expect(at('2026-11-28T06:00:00Z').rule).toBe(-1);
    expect(at('2026-11-28T12:00:00Z').target).toBe('https://example.com/');
  });

  it('a time window with `to` equal to `from` is the whole day (of its days), and the schema takes it', () => {
    const condition = { type: 'time' as const, from: '00:00', to: '00:00', days: [6] };
    expect(RulesSchema.safeParse([{ condition, target_url: 'https://example.com/saturday' }]).success).toBe(true);
    const link = {
      id: 'l_x',
      target_url: 'https://example.com/',
      variants: null,
      forward_query: false,
      rules: [{ condition, target_url: 'https://example.com/saturday' }],
    };
    const at = (iso: string) => routeOf(link, { at: Date.parse(iso), ip: '1.2.3.4', userAgent: '', acceptLanguage: '', query: '' }, () => undefined);
    expect(at('2026-11-28T00:00:00Z').rule).toBe(0); // a Saturday
    expect(at('2026-11-28T23:59:00Z').rule).toBe(0);
    expect(at('2026-11-29T12:00:00Z').rule).toBe(-1); // a Sunday
  });

  it("a country rule reads the visitor's address in the GeoLite2 database; none matches until the database is open", async () => {
    const geo = await openGeoLookup();
    const country = geo.lookup('81.2.69.142')!.country;
    const link = {
      id: 'l_x',
      target_url: 'https://example.com/',
      variants: null,
      forward_query: false,
      rules: [{ condition: { type: 'country' as const, values: [country] }, target_url: 'https://example.com/here' }],
    };
    const from = (ip: string, opened: boolean) =>
      routeOf(link, { at: Date.now(), ip, userAgent: '', acceptLanguage: '', query: '' }, () => (opened ? geo : undefined));
    expect(from('81.2.69.142', true)).toEqual({ target: 'https://example.com/here', rule: 0, variant: -1 });
    expect(from('81.2.69.142', false).rule).toBe(-1);
    expect(from('127.0.0.1', true).rule).toBe(-1);
  });

  it('a PATCH of the rules reaches the edge (the link notice), and [] clears them', async () => {
    const link = await createLink({ target_url: 'https://example.com/before' });
    expect(await location(`/${link.slug}?go=1`)).toBe('https://example.com/before');
    const patched = await app.inject({
      method: 'PATCH',
      url: `/api/v1/links/${link.id}`,
      headers: owner.auth,
      payload: { rules: [{ condition: { type: 'query', name: 'go' }, target_url: 'https://example.com/go' }] },
    });
    expect(patched.statusCode, patched.body).toBe(200);
    await waitFor(async () => (await location(`/${link.slug}?go=1`)) === 'https://example.com/go', 10_000);
    await app.inject({ method: 'PATCH', url: `/api/v1/links/${link.id}`, headers: owner.auth, payload: { rules: [] } });
    await waitFor(async () => (await location(`/${link.slug}?go=1`)) === 'https://example.com/before', 10_000);
    const read = await app.inject({ method: 'GET', url: `/api/v1/links/${link.id}`, headers: owner.auth });
    expect(read.json().data).toMatchObject({ rules: [], variants: null, forward_query: false });
  });

  it('refuses a bad rule with 422 naming its path, more than MAX_RULES, and a rule target on the platform', async () => {
    const badDevice = await post({
      target_url: 'https://example.com/',
      rules: [{ condition: { type: 'device', values: ['fridge'] }, target_url: 'https://example.com/' }],
    });
    expect(badDevice.statusCode).toBe(422);
    expect(badDevice.json().error.code).toBe('validation_error');
    expect(JSON.stringify(badDevice.json().error.details)).toContain('rules.0.condition');
    const badTime = await post({
      target_url: 'https://example.com/',
      rules: [{ condition: { type: 'time', from: '25:00', to: '06:00' }, target_url: 'https://example.com/' }],
    });
    expect(badTime.statusCode).toBe(422);
    const rule = { condition: { type: 'country', values: ['DE'] }, target_url: 'https://example.com/de' };
    expect((await post({ target_url: 'https://example.com/', rules: Array.from({ length: 10 }, () => rule) })).statusCode).toBe(201);
    expect((await post({ target_url: 'https://example.com/', rules: Array.from({ length: MAX_RULES + 1 }, () => rule) })).statusCode).toBe(422);
    const looping = await post({ target_url: 'https://example.com/', rules: [{ ...rule, target_url: `https://${subdomain}.localhost/x` }] });
    expect(looping.statusCode).toBe(403);
    expect(looping.json().error.details).toMatchObject({ reason: 'target_is_platform', 'rules.0.target_url': expect.any(String) });
  });
});

describe('A/B variants', () => {
  it('keeps a visitor on one variant, spreads visitors over all of them, and records the variant', async () => {
    const variants = [1, 2, 3].map((n) => ({ target_url: `https://example.com/v${n}`, weight: 1 }));
    const link = await createLink({ target_url: 'https://example.com/unused', variants });
    const first = await location(`/${link.slug}`, { 'user-agent': WINDOWS_CHROME }, '198.51.100.10');
    for (let i = 0; i < 3; i++) expect(await location(`/${link.slug}`, { 'user-agent': WINDOWS_CHROME }, '198.51.100.10')).toBe(first);
    const seen = new Set<string>();
    for (let i = 0; i < 60; i++) seen.add((await location(`/${link.slug}`, { 'user-agent': WINDOWS_CHROME }, `198.51.100.${20 + i}`))!);
    expect([...seen].sort()).toEqual(variants.map((variant) => variant.target_url));
    const recorded = await waitFor(
      () => visits.filter((entry) => entry.link_id === link.id).length === 64 && visits.filter((entry) => entry.link_id === link.id),
      10_000,
    );
    for (const entry of recorded) expect(entry.variant).toBeGreaterThanOrEqual(0);
    expect(new Set(recorded.map((entry) => entry.variant))).toEqual(new Set([0, 1, 2]));
  });

  it('refuses one variant, six, and a weight of 0', async () => {
    const one = [{ target_url: 'https://example.com/a', weight: 1 }];
    expect((await post({ target_url: 'https://example.com/', variants: one })).statusCode).toBe(422);
    expect((await post({ target_url: 'https://example.com/', variants: Array.from({ length: 6 }, () => one[0]) })).statusCode).toBe(422);
    const zero = await post({ target_url: 'https://example.com/', variants: [one[0], { target_url: 'https://example.com/b', weight: 0 }] });
    expect(zero.statusCode).toBe(422);
    expect(JSON.stringify(zero.json().error.details)).toContain('variants.1.weight');
  });
});

describe('query forwarding', () => {
  it("appends the short URL's query to the target's; the visitor's parameter wins a clash; lt_visit never passes", async () => {
    const link = await createLink({ target_url: 'https://example.com/landing?utm_source=site#top', forward_query: true });
    expect(link.forward_query).toBe(true);
    expect(await location(`/${link.slug}?utm_source=newsletter&utm_medium=email&lt_visit=x`)).toBe(
      'https://example.com/landing?utm_source=newsletter&utm_medium=email#top',
    );
    expect(await location(`/${link.slug}`)).toBe('https://example.com/landing?utm_source=site#top');
    const plain = await createLink({ target_url: 'https://example.com/plain' });
    expect(await location(`/${plain.slug}?utm_source=newsletter`)).toBe('https://example.com/plain');
  });

  it("takes the subdomain's default (forward_query on the subdomain) when a create omits it; existing links keep theirs", async () => {
    const setDefault = (value: unknown, who = owner) =>
      app.inject({ method: 'PATCH', url: `/api/v1/subdomains/${subdomain}`, headers: who.auth, payload: { forward_query: value } });
    const mine = await app.inject({ method: 'GET', url: '/api/v1/subdomains', headers: owner.auth });
    expect(mine.json().data.subdomains.find((item: Json) => item.name === subdomain).forward_query).toBe(false);
    const before = await createLink({ target_url: 'https://example.com/before', client_id: 'fq-replay' });
    expect(before.forward_query).toBe(false);

    const on = await setDefault(true);
    expect(on.statusCode, on.body).toBe(200);
    expect(on.json().data.forward_query).toBe(true);
    const inherited = await createLink({ target_url: 'https://example.com/inherited' });
    expect(inherited.forward_query).toBe(true);
    expect(await location(`/${inherited.slug}?utm_source=newsletter`)).toBe('https://example.com/inherited?utm_source=newsletter');
    const explicit = await createLink({ target_url: 'https://example.com/explicit', forward_query: false });
    expect(explicit.forward_query).toBe(false);
    expect(await location(`/${explicit.slug}?utm_source=newsletter`)).toBe('https://example.com/explicit');
    // The link made before the default changed keeps its own value, and its create still replays (the hash is of the request).
    expect(await location(`/${before.slug}?utm_source=newsletter`)).toBe('https://example.com/before');
    const replay = await post({ target_url: 'https://example.com/before', client_id: 'fq-replay' });
    expect(replay.statusCode, replay.body).toBe(200);
    expect(replay.json().data).toMatchObject({ id: before.id, forward_query: false });
    // Bulk rows go through the same create.
    const bulk = await app.inject({
      method: 'POST',
      url: '/api/v1/links/bulk',
      headers: owner.auth,
      payload: { links: [{ subdomain, target_url: 'https://example.com/bulk' }] },
    });
    expect(bulk.statusCode, bulk.body).toBe(201);
    expect(bulk.json().data.created[0].forward_query).toBe(true);

    const bad = await setDefault('yes');
    expect(bad.statusCode).toBe(422);
    expect(bad.json().error).toMatchObject({ code: 'validation_error', details: { forward_query: expect.any(String) } });
    const stranger = await createOwner(context, app);
    const refused = await setDefault(false, stranger);
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.code).toBe('not_owner');
    expect((await setDefault(false)).json().data.forward_query).toBe(false);
    expect((await createLink({ target_url: 'https://example.com/after-off' })).forward_query).toBe(false);
  });

  it('forwards onto a target without a query, and skips undecodable names', () => {
    expect(forwardQuery('https://example.com/', 'a=1&b=2')).toBe('https://example.com/?a=1&b=2');
    expect(forwardQuery('https://example.com/?', 'a=1')).toBe('https://example.com/?a=1');
    expect(forwardQuery('https://example.com/?a=0&b=1', '%E0%A4%A=1&a=2&c')).toBe('https://example.com/?b=1&a=2&c');
    expect(forwardQuery('https://example.com/?a=0', 'lt_visit=1')).toBe('https://example.com/?a=0');
  });
});

describe('the visit row', () => {
  it('holds matched_rule and variant (ClickHouse 0009), -1 for a visit of an older edge', () => {
    const raw = {
      visit_id: '0192f0c0-0000-7000-8000-000000000000',
      ts: '2026-11-28T10:00:00Z',
      kind: 'visit' as const,
      owner_id: 'o',
      subdomain: 's',
      link_id: 'l',
      slug: 'x',
      ip_public: '1.2.3.4',
      user_agent: '',
      referrer: '',
      accept_language: '',
      query: '',
      expects_beacon: false,
    };
    const enrichment = { kind: 'visit' as const, country: '', region: '', city: '', latitude: null, longitude: null, browser: '', browser_version: '' };
    const full = { ...enrichment, os: '', os_version: '', device_type: '', is_bot: 0 as const, bot_name: '', is_attack: 0 as const, attack_type: '' };
    const at = (column: string) => VISIT_ROW_COLUMNS.indexOf(column as (typeof VISIT_ROW_COLUMNS)[number]);
    expect(visitRowValues({ ...raw, matched_rule: 3, variant: -1 }, full)[at('matched_rule')]).toBe(3);
    expect(visitRowValues(raw, full)[at('variant')]).toBe(-1);
  });
});
