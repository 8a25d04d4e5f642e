import { sql } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { decodeEvents, type PlatformEvent } from '#shared/events/events.js';
import { createAccount } from '#tests/support/accounts.js';
import { closeContext, createTestContext, uniqueName } from '#tests/support/context.js';
import { subscribeToVisitEvents } from '#tests/support/owners.js';
import { waitFor } from '#tests/support/wait.js';
import { TOPICS } from '#shared/message-log/topics.js';
import type { Consumer } from '#shared/message-log/message-log.js';
import { startVisitConsumer } from './visit-consumer.js';
import { saltBook } from './visitors.js';
import { visitorHash } from '#shared/visits/visitor-hash.js';
import { createRepositories } from '#services/repositories.js';

const DEADLINE_MS = 30_000;
const CHROME = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';

let context: Context;
/** The owner of the visits: a webhook subscribes it to visit events. */
let owner: { id: string };
let enricher: Consumer;
let eventsConsumer: Consumer;
const events: PlatformEvent[] = [];

beforeAll(async () => {
  context = await createTestContext();
  owner = await createAccount(context);
  await subscribeToVisitEvents(context, owner.id);
  enricher = await startVisitConsumer(context);
  eventsConsumer = await context.messageLog.consume({
    groupId: uniqueName('events'),
    topic: TOPICS.events,
    handler: async (messages) => void events.push(...messages.flatMap((message) => decodeEvents(message))),
  });
});

afterAll(async () => {
  await Promise.all([enricher?.stop(), eventsConsumer?.stop()]);
  await closeContext(context);
});

const visit = (subdomain: string, fields: Record<string, unknown>) => ({
  visit_id: uuidv7(),
  ts: new Date().toISOString(),
  kind: 'visit',
  owner_id: owner.id,
  subdomain,
  link_id: `${subdomain}-a`,
  slug: 'a',
  ip_public: '81.2.69.142',
  user_agent: CHROME,
  referrer: '',
  accept_language: '',
  query: '',
  ...fields,
});

async function publish(key: string, values: Record<string, unknown>[]) {
  await context.messageLog.publish(
    TOPICS.visitsRaw,
    values.map((value) => ({ key, value: JSON.stringify(value) })),
  );
}

async function rows(subdomain: string, count: number) {
  return waitFor(
    async () => {
      const result = await context.analytics.client.query({
        query: 'SELECT visit_id, link_id, visitor_hash, is_unique, kind FROM visits FINAL WHERE subdomain = {subdomain:String} ORDER BY ts, visit_id',
        query_params: { subdomain },
        format: 'JSONEachRow',
      });
      const found = await result.json<{ visit_id: string; link_id: string; visitor_hash: string; is_unique: number; kind: string }>();
      return found.length >= count && found;
    },
    DEADLINE_MS,
    { intervalMs: 100 },
  );
}

describe('visitor hash and uniques', () => {
  it('hashes with the day salt: same visitor, same hash; another address or agent, another hash; no address inside', () => {
    const hash = visitorHash('s'.repeat(64), '81.2.69.142', CHROME);
    expect(hash).toMatch(/^[0-9a-f]{32}$/);
    expect(visitorHash('s'.repeat(64), '81.2.69.142', CHROME)).toBe(hash);
    expect(visitorHash('t'.repeat(64), '81.2.69.142', CHROME)).not.toBe(hash);
    expect(visitorHash('s'.repeat(64), '81.2.69.143', CHROME)).not.toBe(hash);
    expect(visitorHash('s'.repeat(64), '81.2.69.142', 'curl/8')).not.toBe(hash);
  });

  it("marks a visitor's first visit to a link within the day unique, and the next ones not", async () => {
    const subdomain = uniqueName('uniq');
    const t = Date.now();
    await publish(`${subdomain}-a`, [
      visit(subdomain, { ts: new Date(t).toISOString() }),
      visit(subdomain, { ts: new Date(t + 1).toISOString() }),
      visit(subdomain, { ts: new Date(t + 2).toISOString(), ip_public: '81.2.69.160' }),
    ]);
    // A later batch: the visitor is known from the enricher's memory.
    await rows(subdomain, 3);
    await publish(`${subdomain}-a`, [visit(subdomain, { ts: new Date(t + 3).toISOString() })]);
    await publish(`${subdomain}-b`, [visit(subdomain, { ts: new Date(t + 4).toISOString(), link_id: `${subdomain}-b` })]);
    const stored = await rows(subdomain, 5);
    expect(stored.map((row) => [row.link_id.slice(-1), row.is_unique])).toEqual([
      ['a', 1],
      ['a', 0],
      ['a', 1],
      ['a', 0],
      ['b', 1],
    ]);
    expect(stored[0]!.visitor_hash).toBe(stored[1]!.visitor_hash);
    expect(stored[0]!.visitor_hash).not.toBe(stored[2]!.visitor_hash);
    expect(JSON.stringify(stored)).not.toContain('81.2.69');
  });

  it('asks ClickHouse about pairs it does not remember (a fresh enricher after a restart)', async () => {
    const subdomain = uniqueName('restart');
    const t = Date.now();
    await publish(`${subdomain}-a`, [visit(subdomain, { ts: new Date(t).toISOString() })]);
    await rows(subdomain, 1);
    await enricher.stop();
    enricher = await startVisitConsumer(context);
    await publish(`${subdomain}-a`, [visit(subdomain, { ts: new Date(t + 1).toISOString() })]);
    const stored = await rows(subdomain, 2);
    expect(stored.map((row) => row.is_unique)).toEqual([1, 0]);
  });

  it('keeps the salts of today and yesterday only', async () => {
    const book = saltBook(createRepositories(context));
    const today = new Date().toISOString().slice(0, 10);
    await sql`INSERT INTO visitor_salts (day, salt) VALUES ('2001-01-01', ${'x'.repeat(64)}) ON CONFLICT DO NOTHING`.execute(context.db.db);
    const salt = await book.saltFor(today);
    expect(salt).toMatch(/^[0-9a-f]{64}$/);
    expect(await saltBook(createRepositories(context)).saltFor(today)).toBe(salt);
    const days = await sql<{ day: string }>`SELECT to_char(day, 'YYYY-MM-DD') AS day FROM visitor_salts`.execute(context.db.db);
    expect(days.rows.map((row) => row.day)).not.toContain('2001-01-01');
  });
});

describe('events of stored visits', () => {
  it('emits visit.new for people, visit.unique for first visits, security.suspicious for attacks, nothing for bots', async () => {
    const subdomain = uniqueName('events');
    const t = Date.now();
    const people = [visit(subdomain, { ts: new Date(t).toISOString() }), visit(subdomain, { ts: new Date(t + 1).toISOString() })];
    const bot = visit(subdomain, { ts: new Date(t + 2).toISOString(), user_agent: 'Googlebot/2.1' });
    const attack = visit(subdomain, { ts: new Date(t + 3).toISOString(), query: "id=1' OR '1'='1" });
    await publish(`${subdomain}-a`, [...people, bot, attack]);
    const mine = await waitFor(() => {
      const found = events.filter((event) => event.subdomain === subdomain);
      return found.length >= 4 && found;
    }, DEADLINE_MS);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const all = events.filter((event) => event.subdomain === subdomain);
    expect(all.map((event) => [event.type, (event.data as { visit_id: string }).visit_id]).sort()).toEqual(
      [
        ['visit.new', people[0]!.visit_id],
        ['visit.unique', people[0]!.visit_id],
        ['visit.new', people[1]!.visit_id],
        ['security.suspicious', attack.visit_id],
      ].sort(),
    );
    expect(mine[0]!.owner_id).toBe(owner.id);
    const unique = all.find((event) => event.type === 'visit.unique')!;
    expect(unique.data).toMatchObject({ country: 'GB', browser: 'Chrome', is_unique: true, link_id: `${subdomain}-a` });
    expect(all.find((event) => event.type === 'security.suspicious')!.data).toMatchObject({ reason: 'attack', attack_type: 'sqli' });
  });

  it('raises visit events only for owners with a webhook subscribed to them, from the batch after one subscribes', async () => {
    const other = await createAccount(context);
    const subdomain = uniqueName('unsubscribed');
    const watched = uniqueName('subscribed');
    const unheard = { ...visit(subdomain, {}), owner_id: other.id };
    const heard = visit(watched, {});
    // An owner id no user can have (not a UUID) is looked up as no webhook, not as a failed batch.
    const stray = { ...visit(subdomain, { ip_public: '81.2.69.162' }), owner_id: 'not-a-user-id' };
    // One batch: the subscribed owner's events arrive, the other owners' visits raise none beside them.
    await publish(`${subdomain}-a`, [unheard, heard, stray]);
    await rows(subdomain, 2);
    await waitFor(() => events.some((event) => event.subdomain === watched && event.type === 'visit.new'), DEADLINE_MS);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(events.filter((event) => event.subdomain === subdomain)).toEqual([]);

    // Subscribed to visit.new alone: a first visit raises it, not visit.unique.
    await subscribeToVisitEvents(context, other.id, ['visit.new']);
    const later = { ...visit(subdomain, { ip_public: '81.2.69.161', link_id: `${subdomain}-b` }), owner_id: other.id };
    await publish(`${subdomain}-b`, [later]);
    const raised = await waitFor(() => events.find((event) => event.subdomain === subdomain), DEADLINE_MS);
    expect(raised).toMatchObject({ type: 'visit.new', owner_id: other.id, data: { visit_id: later.visit_id, is_unique: true } });
    await rows(subdomain, 3);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(events.filter((event) => event.subdomain === subdomain).map((event) => event.type)).toEqual(['visit.new']);
  });

  it('raises the events of a visit delivered again with the same ids (receivers deduplicate on id)', async () => {
    const subdomain = uniqueName('again');
    const person = visit(subdomain, {});
    await publish(`${subdomain}-a`, [person]);
    const first = await waitFor(() => {
      const found = events.filter((event) => event.subdomain === subdomain);
      return found.length >= 2 && found;
    }, DEADLINE_MS);
    // The same message again, as after a failure between the insert and the commit.
    await publish(`${subdomain}-a`, [person]);
    const all = await waitFor(() => {
      const found = events.filter((event) => event.subdomain === subdomain);
      return found.length >= 3 && found;
    }, DEADLINE_MS);
    const newIds = all.filter((event) => event.type === 'visit.new').map((event) => event.id);
    expect(newIds.length).toBeGreaterThanOrEqual(2);
    expect(new Set(newIds).size).toBe(1);
    expect(first.find((event) => event.type === 'visit.unique')!.id).not.toBe(newIds[0]);
  });

  it('classifies a burst (one visitor hammering a link) as bots and raises security.suspicious once', async () => {
    const { maxVisits, windowSec } = context.config.burst;
    const subdomain = uniqueName('burst');
    const t = Date.now();
    // maxVisits + 4 visits of one visitor within a second, and one of another visitor amid them.
    const hammer = Array.from({ length: maxVisits + 4 }, (_, i) => visit(subdomain, { ts: new Date(t + i * 10).toISOString() }));
    const other = visit(subdomain, { ts: new Date(t + 55).toISOString(), ip_public: '81.2.69.160' });
    await publish(`${subdomain}-a`, [...hammer.slice(0, 6), other, ...hammer.slice(6)]);
    const stored = await rows(subdomain, hammer.length + 1);
    const kindOf = new Map(stored.map((row) => [row.visit_id, row.kind]));
    expect(hammer.map((entry) => kindOf.get(entry.visit_id))).toEqual([...Array(maxVisits).fill('visit'), ...Array(4).fill('bot')]);
    expect(kindOf.get(other.visit_id)).toBe('visit');
    const suspicious = await waitFor(() => events.find((event) => event.subdomain === subdomain && event.type === 'security.suspicious'), DEADLINE_MS);
    expect(suspicious.data).toMatchObject({
      reason: 'burst',
      visit_id: hammer[maxVisits]!.visit_id,
      kind: 'bot',
      burst: { visits: maxVisits + 1, window_sec: windowSec },
    });
    await waitFor(() => events.filter((event) => event.subdomain === subdomain && event.type === 'visit.new').length >= maxVisits + 1, DEADLINE_MS);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const mine = events.filter((event) => event.subdomain === subdomain);
    // People's visits only: the burst raises no visit.new, and one security.suspicious in all.
    expect(mine.filter((event) => event.type === 'visit.new')).toHaveLength(maxVisits + 1);
    expect(mine.filter((event) => event.type === 'security.suspicious')).toHaveLength(1);
  });
});
