import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { closeContext, uniqueName } from '#tests/support/context.js';
import { claimSubdomain, type TestOwner } from '#tests/support/owners.js';
import { waitFor } from '#tests/support/wait.js';
import { TOPICS } from '#shared/message-log/topics.js';
import type { Consumer } from '#shared/message-log/message-log.js';
import type { BeaconMessage } from '#shared/tracker/beacon.js';
import { publishSubdomainNotice } from '#shared/subdomains/subdomain-notices.js';
import type { listenerClient } from '#tests/support/listener.js';
import { startTestPlatform } from '#tests/support/platform.js';
import { createRepositories } from '#services/repositories.js';
import { startVisitConsumer } from '../enricher/visit-consumer.js';
import { createTrackerOrigins } from './tracker-origins.js';

// A subdomain's tracker_origins at the ingest edge (issue 34): POST /tracker/consent created beacon
// visits for any subdomain from any site, and their referrers and UTM values fed the statistics.
const DEADLINE_MS = 60_000;
const SHOP = 'https://shop.example';

let context: Context;
let app: FastifyInstance;
let ingest: ReturnType<typeof listenerClient>;
let owner: TestOwner;
let enricher: Consumer;
let tap: Consumer;
const published: BeaconMessage[] = [];

beforeAll(async () => {
  ({ context, app, ingest, owner } = await startTestPlatform({ RATE_LIMIT_TRACK: '1000:60' }));
  enricher = await startVisitConsumer(context);
  tap = await context.messageLog.consume({
    groupId: uniqueName('origins-tap'),
    topic: TOPICS.trackerRaw,
    handler: async (messages) => void published.push(...messages.map((message) => JSON.parse(message.value) as BeaconMessage)),
  });
});

afterAll(async () => {
  await tap?.stop();
  await enricher?.stop();
  await app?.close();
  await closeContext(context);
});

type Json = Record<string, any>;

const setOrigins = async (name: string, origins: string[]) => {
  const response = await app.inject({ method: 'PATCH', url: `/api/v1/subdomains/${name}`, headers: owner.auth, payload: { tracker_origins: origins } });
  expect(response.statusCode).toBe(200);
};

/** A consent that would start a visit on `subdomain`, with the request headers given (Origin, Referer). */
const consent = (subdomain: string, headers: Json, page: Json = {}) =>
  ingest.inject({
    method: 'POST',
    url: '/tracker/consent',
    remoteAddress: '198.51.100.30',
    headers: { host: 'localhost:8080', 'content-type': 'text/plain;charset=UTF-8', ...headers },
    payload: JSON.stringify({ subdomain, analytics: true, lan_ip: false, page }),
  });

describe('tracker_origins at the edge', () => {
  it('takes the listed site: CORS names that origin alone (Vary: Origin), the visit is stored, and collect under its token too', async () => {
    const name = await claimSubdomain(app, owner);
    await setOrigins(name, ['https://Shop.Example/']);
    const given = await consent(name, { origin: SHOP }, { query: 'utm_source=listed-site' });
    expect(given.statusCode).toBe(200);
    expect(given.headers['access-control-allow-origin']).toBe(SHOP);
    expect(String(given.headers.vary)).toMatch(/Origin/i);
    const { visit_id: visitId, token } = given.json().data;
    const collected = await ingest.inject({
      method: 'POST',
      url: '/tracker/collect',
      remoteAddress: '198.51.100.30',
      headers: { host: 'localhost:8080', origin: SHOP },
      payload: { token, timezone: 'Europe/Vienna' },
    });
    expect(collected.statusCode).toBe(202);
    expect(collected.headers['access-control-allow-origin']).toBe(SHOP);
    const elsewhere = await ingest.inject({
      method: 'POST',
      url: '/tracker/collect',
      remoteAddress: '198.51.100.30',
      headers: { host: 'localhost:8080', origin: 'https://evil.example' },
      payload: { token, timezone: 'Europe/Vienna' },
    });
    expect(elsewhere.statusCode).toBe(403);
    expect(elsewhere.json().error.details).toMatchObject({ reason: 'origin_not_allowed' });
    await waitFor(async () => {
      const response = await app.inject({ method: 'GET', url: `/api/v1/visits?subdomain=${name}&kind=beacon`, headers: owner.auth });
      return response.json().data.visits.find((visit: Json) => visit.visit_id === visitId && visit.timezone === 'Europe/Vienna');
    }, DEADLINE_MS);
  });

  it('refuses another site with 403 forbidden (origin_not_allowed), no CORS header, and stores nothing', async () => {
    const name = await claimSubdomain(app, owner);
    await setOrigins(name, [SHOP]);
    const refused = await consent(name, { origin: 'https://evil.example' }, { referrer: 'https://evil.example/', query: 'utm_source=forged-probe' });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error).toMatchObject({ code: 'forbidden', details: { reason: 'origin_not_allowed', origin: 'https://evil.example' } });
    expect(refused.headers['access-control-allow-origin']).toBeUndefined();
    // A listed consent after it, through the same log: once it is stored, the refused one would have been too.
    const given = (await consent(name, { origin: SHOP })).json().data;
    await waitFor(() => published.find((message) => message.visit_id === given.visit_id), DEADLINE_MS);
    expect(published.filter((message) => message.own_visit?.subdomain === name).map((message) => message.visit_id)).toEqual([given.visit_id]);
    const result = await context.analytics.client.query({
      query: "SELECT count() AS n FROM visits WHERE subdomain = {name:String} AND (utm_source = 'forged-probe' OR referrer = 'https://evil.example/')",
      query_params: { name },
      format: 'JSONEachRow',
    });
    expect((await result.json<{ n: string | number }>()).map((row) => Number(row.n))).toEqual([0]);
  });

  it("without Origin, the Referer's origin decides; a request naming no site (or Origin: null) is refused", async () => {
    const name = await claimSubdomain(app, owner);
    await setOrigins(name, [SHOP]);
    expect((await consent(name, { referer: `${SHOP}/landing?x=1` })).statusCode).toBe(200);
    expect((await consent(name, { referer: 'https://evil.example/landing' })).statusCode).toBe(403);
    const none = await consent(name, {});
    expect(none.statusCode).toBe(403);
    expect(none.json().error.details).toEqual({ reason: 'origin_not_allowed', origin: null });
    expect((await consent(name, { origin: 'null', referer: `${SHOP}/` })).statusCode).toBe(403);
    // Origin wins over Referer.
    expect((await consent(name, { origin: 'https://evil.example', referer: `${SHOP}/` })).statusCode).toBe(403);
  });

  it('leaves a subdomain without a list open to any site (CORS *), and a change applies at the edge at once, both ways', async () => {
    const name = await claimSubdomain(app, owner);
    const open = await consent(name, { origin: 'https://anywhere.example' });
    expect(open.statusCode).toBe(200);
    expect(open.headers['access-control-allow-origin']).toBe('*');
    // The edge now holds the subdomain as open; the PATCH's notice makes it re-read.
    await setOrigins(name, [SHOP]);
    await waitFor(async () => (await consent(name, { origin: 'https://anywhere.example' })).statusCode === 403, 2_000);
    await setOrigins(name, []);
    await waitFor(async () => (await consent(name, { origin: 'https://anywhere.example' })).statusCode === 200, 2_000);
  });
});

describe('the edge cache of tracker origins', () => {
  it('reads Postgres once per subdomain, not per beacon; re-reads on a notice, and after freshMs without one', async () => {
    const name = await claimSubdomain(app, owner);
    const repositories = createRepositories(context);
    let reads = 0;
    const subdomains = {
      ...repositories.subdomains,
      trackerOriginsOf: (subdomain: string) => {
        reads += 1;
        return repositories.subdomains.trackerOriginsOf(subdomain);
      },
    };
    const origins = await createTrackerOrigins({ ...context, repositories: { subdomains } }, { freshMs: 300 });
    try {
      for (let i = 0; i < 50; i += 1) expect((await origins.of(name)).size).toBe(0);
      expect(reads).toBe(1);
      // Written behind the cache's back (no notice): served as held until it is stale, then re-read.
      await repositories.subdomains.update(name, { tracker_origins: [SHOP] });
      await waitFor(async () => (await origins.of(name)).has(SHOP), 5_000);
      expect(reads).toBeGreaterThanOrEqual(2);
      // A notice re-reads at once.
      await repositories.subdomains.update(name, { tracker_origins: ['https://other.example'] });
      await publishSubdomainNotice(context, name);
      await waitFor(async () => (await origins.of(name)).has('https://other.example'), 250);
    } finally {
      await origins.close();
    }
  });

  it('is warmed at start with every subdomain that lists origins', async () => {
    const name = await claimSubdomain(app, owner);
    await setOrigins(name, [SHOP]);
    const repositories = createRepositories(context);
    let reads = 0;
    const subdomains = {
      ...repositories.subdomains,
      trackerOriginsOf: (subdomain: string) => {
        reads += 1;
        return repositories.subdomains.trackerOriginsOf(subdomain);
      },
    };
    const origins = await createTrackerOrigins({ ...context, repositories: { subdomains } });
    try {
      const held = origins.of(name);
      expect(held).not.toBeInstanceOf(Promise);
      expect([...(held as ReadonlySet<string>)]).toEqual([SHOP]);
      expect(reads).toBe(0);
    } finally {
      await origins.close();
    }
  });
});
