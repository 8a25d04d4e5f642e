import type { FastifyInstance } from 'fastify';
import { SignJWT } from 'jose';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { closeContext, uniqueName } from '#tests/support/context.js';
import type { TestOwner } from '#tests/support/owners.js';
import { waitFor } from '#tests/support/wait.js';
import { consentKey } from '#shared/tracker/consent-token.js';
import { TOPICS } from '#shared/message-log/topics.js';
import type { Consumer } from '#shared/message-log/message-log.js';
import type { BeaconMessage } from '#shared/tracker/beacon.js';
import { beaconStore } from '../enricher/beacon-consumer.js';
import { startVisitConsumer } from '../enricher/visit-consumer.js';
import { toClickHouseTime } from '#shared/analytics/analytics.js';
import type { listenerClient } from '#tests/support/listener.js';
import { startTestPlatform } from '#tests/support/platform.js';
import { createRepositories } from '#services/repositories.js';

// The tracker end to end: ingest edge (/tracker/*) → tracker.raw (in-process, or Kafka in the services
// run) → enricher → ClickHouse. Kafka group joins take seconds: generous, bounded waits.
const DEADLINE_MS = 60_000;
const CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36';

let context: Context;
let app: FastifyInstance;
/** The server's listener, as a socket reaches it. */
let ingest: ReturnType<typeof listenerClient>;
let owner: TestOwner;
let subdomain: string;
let enricher: Consumer;
let tapConsumer: Consumer;
const published: BeaconMessage[] = [];

beforeAll(async () => {
  ({ context, app, ingest, owner, subdomain } = await startTestPlatform({ RATE_LIMIT_REDIRECT: '100000:60', RATE_LIMIT_TRACK: '6:60' }));
  enricher = await startVisitConsumer(context);
  tapConsumer = await context.messageLog.consume({
    groupId: uniqueName('tracker-tap'),
    topic: TOPICS.trackerRaw,
    handler: async (messages) => void published.push(...messages.map((message) => JSON.parse(message.value) as BeaconMessage)),
  });
});

afterAll(async () => {
  await tapConsumer?.stop();
  await enricher?.stop();
  await app?.close();
  await closeContext(context);
});

type Json = Record<string, any>;
let addressCounter = 0;
/** A fresh public client address per scenario, so the track bucket (IP and visit id) never carries over. */
const freshIp = () => `198.51.100.${(addressCounter += 1)}`;

const track = (method: 'GET' | 'POST' | 'OPTIONS', url: string, options: { payload?: unknown; ip?: string; headers?: Json } = {}) =>
  ingest.inject({
    method,
    url,
    remoteAddress: options.ip ?? '198.51.100.250',
    headers: { host: 'localhost:8080', 'user-agent': CHROME, ...(options.headers ?? {}) },
    ...(options.payload !== undefined ? { payload: options.payload as never } : {}),
  });

async function redirectVisit(): Promise<{ visitId: string; location: string; linkId: string }> {
  const created = await app.inject({
    method: 'POST',
    url: '/api/v1/links',
    headers: owner.auth,
    payload: { subdomain, target_url: 'https://shop.example/landing?ref=mail#top', append_visit_id: true },
  });
  expect(created.statusCode).toBe(201);
  const link = created.json().data;
  expect(link.append_visit_id).toBe(true);
  const answer = await ingest.inject({
    method: 'GET',
    url: `/${link.slug}`,
    remoteAddress: '203.0.113.50',
    headers: { host: `${subdomain}.localhost:8080`, 'user-agent': CHROME },
  });
  expect(answer.statusCode).toBe(302);
  const location = String(answer.headers.location);
  const visitId = new URL(location).searchParams.get('lt_visit')!;
  return { visitId, location, linkId: link.id };
}

async function visitRow(visitId: string): Promise<Json | undefined> {
  const result = await context.analytics.client.query({
    query: 'SELECT * FROM visits FINAL WHERE visit_id = {id:UUID}',
    query_params: { id: visitId },
    format: 'JSONEachRow',
  });
  return (await result.json<Json>())[0];
}

const consent = (body: Json, ip = freshIp()) => track('POST', '/tracker/consent', { payload: body, ip });

describe('/tracker.js', () => {
  it('is a small dependency-free script that sends nothing until the page asks for consent', async () => {
    const response = await track('GET', '/tracker.js');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/javascript/);
    expect(response.headers['cache-control']).toBe('public, max-age=3600');
    expect(response.body.length).toBeLessThan(8_000);
    expect(response.body).not.toMatch(/\bimport\b|\brequire\(/);
    // Every request of the script goes through post(), which only consent() and collect() call.
    expect(response.body).toContain("post('/tracker/consent'");
  });

  it('opens CORS to any site without credentials, preflight included', async () => {
    const preflight = await track('OPTIONS', '/tracker/collect', {
      headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    });
    expect(preflight.statusCode).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('*');
    expect(String(preflight.headers['access-control-allow-methods'])).toContain('POST');
    expect(preflight.headers['access-control-allow-credentials']).toBeUndefined();
    const simple = await track('POST', '/tracker/collect', { payload: {}, headers: { origin: 'https://shop.example' } });
    expect(simple.headers['access-control-allow-origin']).toBe('*');
  });

  // Guards issue 23: CORS answered preflights in its own hook, before the one that sets the id.
  it('a preflight (OPTIONS 204) carries X-Request-Id like every other answer', async () => {
    for (const path of ['/tracker/collect', '/tracker/consent', '/tracker.js']) {
      const preflight = await track('OPTIONS', path, {
        headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST', 'x-request-id': 'preflight-0000001' },
      });
      expect(preflight.statusCode).toBe(204);
      expect(preflight.headers['x-request-id']).toBe('preflight-0000001');
    }
    const fresh = await track('OPTIONS', '/tracker/collect', { headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST' } });
    expect(fresh.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe("consent and collect on a redirect's visit (append_visit_id)", () => {
  it('appends lt_visit (the visit id) to the target, before the fragment', async () => {
    const { visitId, location } = await redirectVisit();
    expect(location).toBe(`https://shop.example/landing?ref=mail&lt_visit=${visitId}#top`);
    expect(visitId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7/);
  });

  it('answers a consent token, and collect merges the signals (LAN address with its consent) into the visit, ip_public kept', async () => {
    const { visitId } = await redirectVisit();
    const ip = freshIp();
    const given = await consent({ visit_id: visitId, analytics: true, lan_ip: true }, ip);
    expect(given.statusCode).toBe(200);
    const recorded = given.json().data;
    expect(recorded).toMatchObject({ visit_id: visitId, analytics: true, lan_ip: true });
    expect(typeof recorded.token).toBe('string');
    expect(Date.parse(recorded.expires_at) - Date.now()).toBeGreaterThan(25 * 60_000);

    // Sent from another address with a forged X-Forwarded-For (the peer is not a trusted proxy).
    const collected = await track('POST', '/tracker/collect', {
      ip: '192.0.2.99',
      headers: { 'x-forwarded-for': '6.6.6.6', 'content-type': 'text/plain;charset=UTF-8' },
      payload: JSON.stringify({
        token: recorded.token,
        timezone: 'Europe/Berlin',
        screen: { width: 1920, height: 1080, pixel_ratio: 2, color_depth: 24 },
        network: { effective_type: '4g', downlink: 10, rtt: 50 },
        capabilities: { cookies: true, touch_points: 0 },
        lan_ip: '192.168.1.23',
      }),
    });
    expect(collected.statusCode).toBe(202);
    expect(collected.json().data).toEqual({ visit_id: visitId, accepted: true });

    const row = await waitFor(
      async () => {
        const found = await visitRow(visitId);
        return found?.timezone === 'Europe/Berlin' && found;
      },
      DEADLINE_MS,
      { message: 'merged visit row' },
    );
    expect(row).toMatchObject({
      kind: 'visit',
      ip_public: '203.0.113.50',
      consent_analytics: 1,
      consent_lan_ip: 1,
      ip_lan: '192.168.1.23',
      screen: '1920x1080',
    });
    expect(JSON.parse(row.network)).toEqual({ effective_type: '4g', downlink: 10, rtt: 50 });
    expect(JSON.parse(row.capabilities)).toEqual({ cookies: true, touch_points: 0, pixel_ratio: 2, color_depth: 24 });
    expect(row.beacon_at).not.toBeNull();
    expect(row.browser).toBe('Chrome');
  });

  it('refuses a body that tries to set ip_public (unknown field), and stores nothing', async () => {
    const { visitId } = await redirectVisit();
    const recorded = (await consent({ visit_id: visitId, analytics: true, lan_ip: false })).json().data;
    const response = await track('POST', '/tracker/collect', { ip: freshIp(), payload: { token: recorded.token, ip_public: '6.6.6.6', timezone: 'UTC' } });
    expect(response.statusCode).toBe(400);
    expect(response.json().error.details.unknown).toEqual(['ip_public']);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(published.filter((message) => message.visit_id === visitId && message.type === 'collect')).toEqual([]);
  });

  it('keeps no LAN address without lan_ip consent (meta.ignored), but the other signals', async () => {
    const { visitId } = await redirectVisit();
    const recorded = (await consent({ visit_id: visitId, analytics: true, lan_ip: false })).json().data;
    expect(recorded.lan_ip).toBe(false);
    const response = await track('POST', '/tracker/collect', { ip: freshIp(), payload: { token: recorded.token, timezone: 'Asia/Tokyo', lan_ip: '10.0.0.5' } });
    expect(response.statusCode).toBe(202);
    expect(response.json().meta.ignored).toEqual(['lan_ip']);
    const row = await waitFor(async () => {
      const found = await visitRow(visitId);
      return found?.timezone === 'Asia/Tokyo' && found;
    }, DEADLINE_MS);
    expect(row).toMatchObject({ consent_analytics: 1, consent_lan_ip: 0, ip_lan: '' });
    expect(published.find((message) => message.visit_id === visitId && message.type === 'collect')?.signals?.lan_ip).toBeUndefined();
  });

  it('records a refusal on the visit: no token, collect answers 403 and stores nothing', async () => {
    const { visitId } = await redirectVisit();
    const refused = await consent({ visit_id: visitId, analytics: false, lan_ip: true });
    expect(refused.statusCode).toBe(200);
    expect(refused.json().data).toEqual({ visit_id: visitId, analytics: false, lan_ip: false, token: null, expires_at: null });
    const without = await track('POST', '/tracker/collect', { ip: freshIp(), payload: { timezone: 'UTC' } });
    expect(without.statusCode).toBe(403);
    expect(without.json().error).toMatchObject({ code: 'forbidden', details: { reason: 'consent_required' } });
    const withoutGet = await track('GET', `/tracker/collect?data=${encodeURIComponent('{"timezone":"UTC"}')}`, { ip: freshIp() });
    expect(withoutGet.statusCode).toBe(403);
    const recorded = await waitFor(() => published.find((message) => message.visit_id === visitId), DEADLINE_MS);
    expect(recorded).toMatchObject({ type: 'consent', analytics: false, lan_ip: false });
    await waitFor(async () => (await visitRow(visitId))?.kind === 'visit', DEADLINE_MS);
    const row = (await visitRow(visitId))!;
    expect(row).toMatchObject({ consent_analytics: 0, timezone: '', screen: '', ip_lan: '' });
    expect(published.filter((message) => message.type === 'collect' && message.visit_id === visitId)).toEqual([]);
  });

  it('answers 403 to forged and expired consent tokens', async () => {
    const visitId = uuidv7();
    const forged = await new SignJWT({ a: 1, l: 1 })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(visitId)
      .setAudience('linktrack-tracker')
      .setExpirationTime('10m')
      .sign(new TextEncoder().encode('x'.repeat(43)));
    const key = await consentKey(createRepositories(context), context.config.tracker.secret);
    const expired = await new SignJWT({ a: 1, l: 1 })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(visitId)
      .setAudience('linktrack-tracker')
      .setExpirationTime(Math.floor(Date.now() / 1000) - 5)
      .sign(key);
    const valid = await new SignJWT({ a: 1, l: 0 })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(visitId)
      .setAudience('linktrack-tracker')
      .setExpirationTime('5m')
      .sign(key);
    for (const token of [forged, expired, 'not-a-token', `${valid.slice(0, -2)}xx`]) {
      const response = await track('POST', '/tracker/collect', { ip: freshIp(), payload: { token, timezone: 'UTC' } });
      expect(response.statusCode, token.slice(0, 20)).toBe(403);
    }
    const accepted = await track('GET', `/tracker/collect?token=${valid}&data=${encodeURIComponent('{"timezone":"UTC"}')}`, { ip: freshIp() });
    expect(accepted.statusCode).toBe(202);
  });
});

describe('a visit the tracker starts (data-subdomain, no redirect)', () => {
  it('is stored as a beacon visit with the address the ingest node saw, and collect merges into it', async () => {
    const given = await track('POST', '/tracker/consent', {
      ip: '192.0.2.77',
      headers: { 'x-forwarded-for': '6.6.6.6' },
      payload: { subdomain, analytics: true, lan_ip: false, page: { referrer: 'https://news.example/', query: 'utm_source=news&utm_campaign=spring' } },
    });
    expect(given.statusCode).toBe(200);
    const { visit_id: visitId, token } = given.json().data;
    expect(visitId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7/);
    expect((await track('POST', '/tracker/collect', { ip: '192.0.2.77', payload: { token, timezone: 'America/New_York' } })).statusCode).toBe(202);
    const row = await waitFor(async () => {
      const found = await visitRow(visitId);
      return found?.timezone === 'America/New_York' && found;
    }, DEADLINE_MS);
    expect(row).toMatchObject({
      kind: 'beacon',
      owner_id: owner.id,
      subdomain,
      link_id: '',
      ip_public: '192.0.2.77',
      referrer: 'https://news.example/',
      utm_source: 'news',
      utm_campaign: 'spring',
      consent_analytics: 1,
    });
  });

  // Guards issue 34: a refusal stored a beacon visit with the visitor's address and user agent.
  it('a refusal stores nothing: no message, no visit, no row carrying the address or user agent', async () => {
    const ip = '192.0.2.201';
    const agent = `RefusingBrowser/${Date.now()}`;
    const refused = await track('POST', '/tracker/consent', {
      ip,
      headers: { 'user-agent': agent },
      payload: { subdomain, analytics: false, lan_ip: false, page: { referrer: 'https://refused.example/', query: 'utm_source=refused-probe' } },
    });
    expect(refused.statusCode).toBe(200);
    expect(refused.json().data).toEqual({ visit_id: null, analytics: false, lan_ip: false, token: null, expires_at: null });
    // A consent after it, through the same log: once its visit is stored, the refusal would have been too.
    const given = (await consent({ subdomain, analytics: true, lan_ip: false })).json().data;
    await waitFor(async () => (await visitRow(given.visit_id))?.kind === 'beacon', DEADLINE_MS);
    expect(published.filter((message) => JSON.stringify(message).includes(agent) || message.own_visit?.ip_public === ip)).toEqual([]);
    const result = await context.analytics.client.query({
      query:
        'SELECT count() AS n FROM visits WHERE ip_public = {ip:String} OR user_agent = {agent:String} OR referrer = {referrer:String} OR utm_source = {utm:String}',
      query_params: { ip, agent, referrer: 'https://refused.example/', utm: 'refused-probe' },
      format: 'JSONEachRow',
    });
    expect((await result.json<{ n: string | number }>()).map((row) => Number(row.n))).toEqual([0]);
  });

  it('the enricher stores nothing of a refused consent that would start a visit, whatever a message carries (an older node)', async () => {
    const refusedId = uuidv7();
    const ownVisit = {
      subdomain,
      ip_public: '192.0.2.202',
      user_agent: 'OlderNodeRefusal/1',
      accept_language: 'de',
      referrer: 'https://old.example/',
      query: '',
    };
    // A consent given after it under the same key (one partition, in order): once its visit is stored, the refusal was handled.
    const givenId = uuidv7();
    const at = Date.now();
    await context.messageLog.publish(TOPICS.trackerRaw, [
      {
        key: refusedId,
        value: JSON.stringify({ type: 'consent', visit_id: refusedId, ts: new Date(at).toISOString(), analytics: false, lan_ip: false, own_visit: ownVisit }),
      },
      {
        key: refusedId,
        value: JSON.stringify({ type: 'consent', visit_id: givenId, ts: new Date(at + 1).toISOString(), analytics: true, lan_ip: false, own_visit: ownVisit }),
      },
    ]);
    await waitFor(async () => (await visitRow(givenId))?.kind === 'beacon', DEADLINE_MS);
    expect(await visitRow(refusedId)).toBeUndefined();
    const states = await context.analytics.client.query({
      query: 'SELECT count() AS n FROM visit_beacons WHERE visit_id = {id:UUID}',
      query_params: { id: refusedId },
      format: 'JSONEachRow',
    });
    expect((await states.json<{ n: string | number }>()).map((row) => Number(row.n))).toEqual([0]);
  });

  it('dead-letters a consent for a subdomain that does not exist, refuses text storage cannot hold at the edge, and the rest flows', async () => {
    const dead: { value: string; headers?: Record<string, string> }[] = [];
    const tap = await context.messageLog.consume({
      groupId: uniqueName('tracker-dlq'),
      topic: TOPICS.visitsDlq,
      handler: async (messages) => void dead.push(...messages),
    });
    try {
      const ghost = (await consent({ subdomain: 'no-such-subdomain-here', analytics: true, lan_ip: false })).json().data;
      // Valid JSON that storage cannot hold (a lone surrogate): refused at the edge, naming the field (the enricher's
      // dead letter for it stays, for messages of older nodes).
      const broken = await consent({ subdomain, analytics: true, lan_ip: false, page: { referrer: 'https://x.example/\ud800' } });
      expect(broken.statusCode).toBe(422);
      expect(Object.keys(broken.json().error.details)).toEqual(['page.referrer']);
      const real = (await consent({ subdomain, analytics: true, lan_ip: false })).json().data;
      const letter = await waitFor(() => dead.find((message) => message.value.includes(ghost.visit_id)), DEADLINE_MS);
      expect(letter.headers?.['x-dlq-reason']).toBe('unknown subdomain: no-such-subdomain-here');
      expect(letter.headers).toMatchObject({ 'x-dlq-source': 'tracker.raw', 'x-dlq-topic': 'tracker.raw' });
      await waitFor(async () => (await visitRow(real.visit_id))?.kind === 'beacon', DEADLINE_MS);
    } finally {
      await tap.stop();
    }
  });
});

describe('consent gating and ordering in the enricher', () => {
  it('stores no signal without analytics consent and no LAN address without lan_ip consent, whatever a message carries', async () => {
    const { visitId } = await redirectVisit();
    await waitFor(async () => (await visitRow(visitId)) !== undefined, DEADLINE_MS);
    const signals = { timezone: 'UTC', lan_ip: '10.1.2.3', screen: { width: 800, height: 600 } };
    await context.messageLog.publish(TOPICS.trackerRaw, [
      { key: visitId, value: JSON.stringify({ type: 'collect', visit_id: visitId, ts: new Date().toISOString(), analytics: true, lan_ip: false, signals }) },
    ]);
    const row = await waitFor(async () => {
      const found = await visitRow(visitId);
      return found?.timezone === 'UTC' && found;
    }, DEADLINE_MS);
    expect(row).toMatchObject({ ip_lan: '', consent_lan_ip: 0, screen: '800x600' });

    await context.messageLog.publish(TOPICS.trackerRaw, [
      {
        key: visitId,
        value: JSON.stringify({ type: 'collect', visit_id: visitId, ts: new Date(Date.now() + 1000).toISOString(), analytics: false, lan_ip: true, signals }),
      },
    ]);
    const withdrawn = await waitFor(async () => {
      const found = await visitRow(visitId);
      return found?.consent_analytics === 0 && found;
    }, DEADLINE_MS);
    expect(withdrawn).toMatchObject({ timezone: '', screen: '', ip_lan: '', consent_lan_ip: 0, ip_public: '203.0.113.50' });
  });

  it('merges a beacon that was stored before its visit arrived, once the visit is inserted', async () => {
    const visitId = uuidv7();
    const now = new Date();
    await beaconStore(createRepositories(context)).saveStates([
      {
        visit_id: visitId,
        received_at: toClickHouseTime(now.toISOString()),
        consent_analytics: 1,
        consent_lan_ip: 0,
        ip_lan: '',
        timezone: 'Australia/Sydney',
        screen: '390x844',
        network: '',
        capabilities: '',
        collected: 1,
        version: now.getTime() + 5,
      },
    ]);
    await context.messageLog.publish(TOPICS.visitsRaw, [
      {
        key: 'l_early',
        value: JSON.stringify({
          visit_id: visitId,
          ts: now.toISOString(),
          owner_id: owner.id,
          subdomain,
          link_id: 'l_early',
          slug: 'early',
          ip_public: '203.0.113.8',
          user_agent: CHROME,
          expects_beacon: true,
        }),
      },
    ]);
    const row = await waitFor(async () => {
      const found = await visitRow(visitId);
      return found?.timezone === 'Australia/Sydney' && found;
    }, DEADLINE_MS);
    expect(row).toMatchObject({ kind: 'visit', screen: '390x844', consent_analytics: 1, ip_public: '203.0.113.8' });
  });
});

describe('methods', () => {
  it('a method a beacon path is not served under answers 405 with its Allow', async () => {
    const trace = await ingest.inject({ method: 'TRACE', url: '/tracker.js', headers: { host: 'localhost:8080' } });
    expect(trace.statusCode).toBe(405);
    expect(trace.headers.allow).toBe('GET, HEAD');
    const collect = await ingest.inject({ method: 'PUT', url: '/tracker/collect', headers: { host: 'localhost:8080' } });
    expect(collect.statusCode).toBe(405);
    expect(collect.json().error.details.allow).toEqual(['GET', 'HEAD', 'POST']);
  });
});

describe('languages', () => {
  // Guards issue 23: the tracker's answers followed Accept-Language only.
  it("the tracker's errors follow ?lang= first, as the API does, then Accept-Language", async () => {
    const collect = await track('POST', '/tracker/collect?lang=de', { payload: {}, ip: freshIp(), headers: { 'accept-language': 'fr' } });
    expect(collect.statusCode).toBe(403);
    expect(collect.headers['content-language']).toBe('de');
    expect(collect.json().error.message).toMatch(/Einwilligung/);
    const consentAnswer = await track('POST', '/tracker/consent?lang=es', { payload: { analytics: 'yes' }, ip: freshIp() });
    const english = await track('POST', '/tracker/consent', { payload: { analytics: 'yes' }, ip: freshIp() });
    expect(consentAnswer.statusCode).toBeGreaterThanOrEqual(400);
    expect(consentAnswer.headers['content-language']).toBe('es');
    expect(consentAnswer.json().error.code).toBe(english.json().error.code);
    expect(consentAnswer.json().error.message).not.toBe(english.json().error.message);
    const script = await track('GET', '/tracker.js?lang=fr&unknown=1');
    expect(script.statusCode).toBe(400);
    expect(script.headers['content-language']).toBe('fr');
    expect(script.json().error.message).toMatch(/^Paramètre inconnu/);
    const byHeader = await track('POST', '/tracker/collect', { payload: {}, ip: freshIp(), headers: { 'accept-language': 'fr' } });
    expect(byHeader.headers['content-language']).toBe('fr');
  });
});

describe('validation and the track bucket', () => {
  // The body is one of two shapes (the document says so with anyOf): neither is a missing field,
  // both an unknown one; a well-formed visit id that is no redirect of the last 24 hours is not found.
  it('answers 400 for a consent naming both or neither of visit_id and subdomain, and 404 for a visit id that is no recent UUIDv7', async () => {
    const neither = await consent({ analytics: true, lan_ip: false });
    expect(neither.statusCode).toBe(400);
    expect(neither.json().error.code).toBe('missing_parameter');
    const both = await consent({ visit_id: uuidv7(), subdomain, analytics: true, lan_ip: false });
    expect(both.statusCode).toBe(400);
    expect(both.json().error.code).toBe('bad_request');
    for (const visitId of ['6f1c1f9e-4b7a-4d7e-9a57-0c2f2d1e8b11', uuidv7({ msecs: Date.now() - 2 * 86_400_000 })]) {
      const response = await consent({ visit_id: visitId, analytics: true, lan_ip: false });
      expect(response.statusCode, visitId).toBe(404);
      expect(Object.keys(response.json().error.details)).toContain('visit_id');
    }
    expect((await consent({ subdomain, analytics: 'yes', lan_ip: false })).statusCode).toBe(422);
    expect((await track('POST', '/tracker/consent', { ip: freshIp(), payload: '{not json', headers: { 'content-type': 'text/plain' } })).statusCode).toBe(400);
  });

  it('answers 422 for a public address as LAN IP and for malformed GET data', async () => {
    const recorded = (await consent({ subdomain, analytics: true, lan_ip: true })).json().data;
    const publicLan = await track('POST', '/tracker/collect', { ip: freshIp(), payload: { token: recorded.token, lan_ip: '8.8.8.8' } });
    expect(publicLan.statusCode).toBe(422);
    expect(publicLan.json().error.details).toHaveProperty('lan_ip');
    const mdns = await track('POST', '/tracker/collect', {
      ip: freshIp(),
      payload: { token: recorded.token, lan_ip: '1f0e6c2a-3b4d-4e5f-8a9b-0c1d2e3f4a5b.local' },
    });
    expect(mdns.statusCode).toBe(202);
    const malformed = await track('GET', `/tracker/collect?token=${recorded.token}&data=%7Bnope`, { ip: freshIp() });
    expect(malformed.statusCode).toBe(422);
  });

  it('limits per IP and visit id (RATE_LIMIT_TRACK), with 429 and Retry-After', async () => {
    const ip = freshIp();
    const { visitId } = await redirectVisit();
    for (let i = 0; i < 6; i += 1) expect((await consent({ visit_id: visitId, analytics: false, lan_ip: false }, ip)).statusCode).toBe(200);
    const limited = await consent({ visit_id: visitId, analytics: false, lan_ip: false }, ip);
    expect(limited.statusCode).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.json().error.details.bucket).toBe('track');
    const other = (await redirectVisit()).visitId;
    expect((await consent({ visit_id: other, analytics: false, lan_ip: false }, ip)).statusCode).toBe(200);
  });
});

describe('operational visibility', () => {
  it("reports the enricher's consumers in the health probe, and their lag in the metrics", async () => {
    const health = await app.inject({ method: 'GET', url: '/api/v1/health' });
    expect(health.statusCode).toBe(200);
    const consumers: Json[] = health.json().data.consumers;
    expect(consumers.map((consumer) => `${consumer.group} ${consumer.topic}`)).toEqual(
      expect.arrayContaining(['enricher visits.raw', 'enricher-beacons tracker.raw']),
    );
    for (const consumer of consumers) {
      expect(consumer.running).toBe(true);
      expect(consumer.lag).toBeGreaterThanOrEqual(0);
      expect(consumer.last_error).toBeNull();
    }
    expect(consumers.find((consumer) => consumer.group === 'enricher-beacons')!.last_batch_at).not.toBeNull();
    const metrics = await app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toMatch(/visit_log_consumer_lag\{group="enricher",topic="visits.raw"\} \d+/);
    expect(metrics.body).toMatch(/beacons_processed_total\{outcome="merged"\} [1-9]/);
  });
});
