import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { decodeEvents, type PlatformEvent } from '#shared/events/events.js';
import { closeContext, uniqueName } from '#tests/support/context.js';
import { TOPICS } from '#shared/message-log/topics.js';
import type { TestOwner } from '#tests/support/owners.js';
import { waitFor } from '#tests/support/wait.js';
import type { Consumer } from '#shared/message-log/message-log.js';
import { startVisitConsumer } from '../enricher/visit-consumer.js';
import type { listenerClient } from '#tests/support/listener.js';
import { startTestPlatform } from '#tests/support/platform.js';

// End to end: redirects at the edge → message log (in-process, or Kafka in the services run) →
// enricher → ClickHouse. Kafka group joins take seconds: generous, bounded waits.
const DEADLINE_MS = 60_000;

let context: Context;
let app: FastifyInstance;
/** The server's listener, as a socket reaches it. */
let ingest: ReturnType<typeof listenerClient>;
let owner: TestOwner;
let subdomain: string;
let enricher: Consumer | undefined;

beforeAll(async () => {
  ({ context, app, ingest, owner, subdomain } = await startTestPlatform({ RATE_LIMIT_REDIRECT: '1000000:60' }));
});

afterAll(async () => {
  await enricher?.stop();
  await app?.close();
  await closeContext(context);
});

async function rowsOf(linkId: string): Promise<{ total: number; distinct: number }> {
  const result = await context.analytics.client.query({
    query: 'SELECT count() AS total, uniqExact(visit_id) AS distinct FROM visits FINAL WHERE link_id = {linkId:String}',
    query_params: { linkId },
    format: 'JSONEachRow',
  });
  const [row] = await result.json<{ total: number; distinct: number }>();
  return { total: Number(row!.total), distinct: Number(row!.distinct) };
}

async function redirects(slug: string, count: number, from: number) {
  for (let i = 0; i < count; i += 25) {
    const answers = await Promise.all(
      Array.from({ length: Math.min(25, count - i) }, (_, j) =>
        ingest.inject({
          method: 'GET',
          url: `/${slug}?n=${from + i + j}`,
          headers: { host: `${subdomain}.localhost:8080`, 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64)' },
        }),
      ),
    );
    for (const answer of answers) expect(answer.statusCode).toBe(302);
  }
}

describe('max_visits', () => {
  it('stops redirects on every node once the visits reach the limit, raises link.limit_reached, and a new limit lifts it', { timeout: 120_000 }, async () => {
    enricher ??= await startVisitConsumer(context);
    const received: PlatformEvent[] = [];
    const consumer = await context.messageLog.consume({
      groupId: uniqueName('limit-events'),
      topic: TOPICS.events,
      handler: async (messages) => void received.push(...messages.flatMap((message) => decodeEvents(message))),
    });
    try {
      const created = await app.inject({
        method: 'POST',
        url: '/api/v1/links',
        headers: owner.auth,
        payload: { subdomain, target_url: 'https://example.com/', max_visits: 5 },
      });
      const link = created.json().data;
      await redirects(link.slug, 5, 0);
      const reached = await waitFor(
        () => received.find((event) => event.type === 'link.limit_reached' && (event.data as { link_id: string }).link_id === link.id),
        DEADLINE_MS,
        {
          message: 'link.limit_reached',
        },
      );
      expect(reached.data).toMatchObject({ link_id: link.id, max_visits: 5, visits: 5 });
      const redirectOf = () => ingest.inject({ method: 'GET', url: `/${link.slug}`, headers: { host: `${subdomain}.localhost:8080` } });
      await waitFor(async () => (await redirectOf()).statusCode === 410, 1_000, { message: 'redirects stopped within a second' });
      const gone = await redirectOf();
      expect(gone.json().error).toMatchObject({
        code: 'gone',
        message: 'This link reached its visit limit: it no longer leads anywhere.',
        details: { reason: 'limit_reached' },
      });
      const read = await app.inject({ method: 'GET', url: `/api/v1/links/${link.id}`, headers: owner.auth });
      expect(read.json().data).toMatchObject({ state: 'limit_reached' });
      expect(read.json().data.limit_reached_at).not.toBeNull();

      await app.inject({ method: 'PATCH', url: `/api/v1/links/${link.id}`, headers: owner.auth, payload: { max_visits: 10 } });
      await waitFor(async () => (await redirectOf()).statusCode === 302, 1_000, { message: 'a new limit lifts the stop' });
      expect((await app.inject({ method: 'GET', url: `/api/v1/links/${link.id}`, headers: owner.auth })).json().data.state).toBe('active');
    } finally {
      await consumer.stop();
    }
  });
});

describe('redirects → message log → enricher → ClickHouse', () => {
  it('turns N redirects into exactly N rows, also when the enricher stops mid-stream and starts again', { timeout: 120_000 }, async () => {
    const created = await app.inject({ method: 'POST', url: '/api/v1/links', headers: owner.auth, payload: { subdomain, target_url: 'https://example.com/' } });
    const link = created.json().data;
    // One enricher at a time: the test stops the one that runs.
    await enricher?.stop();
    enricher = await startVisitConsumer(context);
    await redirects(link.slug, 150, 0);
    await waitFor(async () => (await rowsOf(link.id)).total > 0, DEADLINE_MS, { message: 'first rows' });
    // Stopped mid-stream: the redirects go on, the visits wait in the log.
    await enricher.stop();
    enricher = undefined;
    await redirects(link.slug, 150, 150);
    enricher = await startVisitConsumer(context);
    await redirects(link.slug, 100, 300);
    const final = await waitFor(
      async () => {
        const rows = await rowsOf(link.id);
        return rows.total >= 400 && rows;
      },
      DEADLINE_MS,
      { message: '400 rows', intervalMs: 200 },
    );
    expect(final).toEqual({ total: 400, distinct: 400 });
  });
});

describe('attack probes on a short host', () => {
  it("reach the subdomain owner's visit list: GET /.env on the short host is listed by GET /api/v1/visits?kind=attack", { timeout: 120_000 }, async () => {
    enricher ??= await startVisitConsumer(context);
    const probe = await ingest.inject({ method: 'GET', url: '/.env', headers: { host: `${subdomain}.localhost:8080`, 'user-agent': 'probe/1.0' } });
    expect(probe.statusCode).toBe(404);
    const listed = await waitFor(
      async () => {
        const response = await app.inject({ method: 'GET', url: `/api/v1/visits?kind=attack&subdomain=${subdomain}`, headers: owner.auth });
        expect(response.statusCode).toBe(200);
        return (response.json().data.visits as Record<string, unknown>[]).find((visit) => visit.slug === '/.env');
      },
      DEADLINE_MS,
      { message: "the probe in the owner's list", intervalMs: 100 },
    );
    expect(listed).toMatchObject({ kind: 'attack', is_attack: true, subdomain, link_id: '', user_agent: 'probe/1.0' });
    expect(listed.attack_type).not.toBe('');
    // Without naming the subdomain too: the owner's own list holds it.
    const all = await app.inject({ method: 'GET', url: '/api/v1/visits?kind=attack', headers: owner.auth });
    expect(all.json().data.visits.map((visit: { visit_id: string }) => visit.visit_id)).toContain(listed.visit_id);
  });
});
