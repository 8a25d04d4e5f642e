import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { closeContext, createTestContext, SERVICES_MODE, uniqueName } from '#tests/support/context.js';
import { rawVisit } from '#tests/support/visits.js';
import { waitFor } from '#tests/support/wait.js';
import { TOPICS } from '#shared/message-log/topics.js';
import type { Consumer, LogMessage } from '#shared/message-log/message-log.js';
import { RawVisitSchema, type RawVisit } from '#shared/visits/raw-visit.js';
import { startVisitConsumer } from './visit-consumer.js';
import { enrich } from '#shared/visits/enrichment.js';
import { insertVisits } from './visit-writer.js';
import { createRepositories } from '#services/repositories.js';

/**
 * Renames a table, retried: under a heavily loaded machine chDB's Atomic database now and then
 * answers a rename with ATOMIC_RENAME_FAIL (its metadata file busy), which says nothing of the
 * enricher.
 */
async function renameTable(from: string, to: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await context.analytics.client.command({ query: `RENAME TABLE ${from} TO ${to}` });
      return;
    } catch (error) {
      if (attempt >= 5 || !String(error).includes('ATOMIC_RENAME_FAIL')) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
    }
  }
}

/** What the enricher derives from a visit, without geolocation (these tests insert rows themselves). */
const plain = (visit: RawVisit) => enrich(visit, { lookup: () => undefined });

/** Kafka consumer-group joins and kafkajs retry back-off take seconds: generous, bounded waits. */
const DEADLINE_MS = 30_000;

let context: Context;
let enricher: Consumer;
const consumers: Consumer[] = [];

beforeAll(async () => {
  context = await createTestContext();
  enricher = await startVisitConsumer(context);
});

afterAll(async () => {
  // In parallel: a Kafka consumer's stop waits out its long-poll fetch (up to 5 s).
  await Promise.all([enricher?.stop(), ...consumers.map((consumer) => consumer.stop())]);
  await closeContext(context);
});

/** Publishes visits (or raw text) on visits.raw keyed by link id, as the edge does. */
async function publish(key: string, values: (Record<string, unknown> | string)[], headers?: Record<string, string>): Promise<void> {
  await context.messageLog.publish(
    TOPICS.visitsRaw,
    values.map((value) => ({ key, value: typeof value === 'string' ? value : JSON.stringify(value), ...(headers ? { headers } : {}) })),
  );
}

interface VisitRow {
  visit_id: string;
  ts: string;
  kind: string;
  owner_id: string;
  subdomain: string;
  link_id: string;
  slug: string;
  ip_public: string;
  user_agent: string;
  referrer: string;
  referrer_host: string;
  accept_language: string;
  query: string;
  utm_source: string;
  utm_medium: string;
  utm_campaign: string;
  utm_term: string;
  utm_content: string;
  is_bot: number;
  is_attack: number;
}

/** The rows of a subdomain in `visits`, deduplicated (FINAL) unless asked otherwise. */
async function visitsOf(subdomain: string, { final = true } = {}): Promise<VisitRow[]> {
  const result = await context.analytics.client.query({
    query: `SELECT * FROM visits ${final ? 'FINAL' : ''} WHERE subdomain = {subdomain:String} ORDER BY ts, visit_id`,
    query_params: { subdomain },
    format: 'JSONEachRow',
  });
  return result.json<VisitRow>();
}

async function waitForVisits(subdomain: string, count: number): Promise<VisitRow[]> {
  return waitFor(
    async () => {
      const rows = await visitsOf(subdomain);
      return rows.length >= count ? rows : undefined;
    },
    DEADLINE_MS,
    { intervalMs: 100, message: `${count} visits of ${subdomain} in ClickHouse` },
  );
}

/** Collects the dead letters published under `key` from now on (a consumer group of its own). */
async function deadLetters(key: string): Promise<LogMessage[]> {
  const received: LogMessage[] = [];
  consumers.push(
    await context.messageLog.consume({
      groupId: uniqueName('dlq-reader'),
      topic: TOPICS.visitsDlq,
      handler: async (messages) => void received.push(...messages.filter((message) => message.key === key)),
    }),
  );
  return received;
}

describe(`enricher (${SERVICES_MODE ? 'kafka' : 'in-process log'} → ClickHouse)`, { timeout: 90_000 }, () => {
  it('writes published raw visits into the visits table with their fields', async () => {
    const subdomain = uniqueName('sub');
    const visits = [
      rawVisit(subdomain, { ts: '2025-06-01T10:00:00.001Z' }),
      rawVisit(subdomain, { ts: '2025-06-01T12:00:00.002+02:00', slug: 'second' }),
      rawVisit(subdomain, { ts: '2025-06-01T10:00:00.003Z', ip_public: '2001:db8::1' }),
    ];
    await publish(`${subdomain}-link`, visits);
    const rows = await waitForVisits(subdomain, 3);
    expect(rows).toHaveLength(3);
    expect(rows.map((row) => row.ts)).toEqual(['2025-06-01 10:00:00.001', '2025-06-01 10:00:00.002', '2025-06-01 10:00:00.003']);
    expect(rows.map((row) => row.visit_id)).toEqual(visits.map((visit) => visit.visit_id));
    expect(rows[0]).toMatchObject({
      kind: 'visit',
      owner_id: 'owner-1',
      subdomain,
      link_id: `${subdomain}-link`,
      slug: 'promo',
      ip_public: '203.0.113.7',
      user_agent: 'Mozilla/5.0 (X11; Linux x86_64)',
      accept_language: 'en-GB,en;q=0.8',
      is_bot: 0,
      is_attack: 0,
    });
    expect(rows[1]!.slug).toBe('second');
    expect(rows[2]!.ip_public).toBe('2001:db8::1');
  });

  it('fills the defaults of a minimal raw visit (no user agent: a bot)', async () => {
    const subdomain = uniqueName('minimal');
    const visitId = uuidv7();
    await publish('link-x', [{ visit_id: visitId, ts: '2025-06-02T00:00:00Z', owner_id: 'o', subdomain, ip_public: '198.51.100.1' }]);
    const [row] = await waitForVisits(subdomain, 1);
    expect(row).toMatchObject({
      visit_id: visitId,
      kind: 'bot',
      bot_name: 'no user agent',
      link_id: '',
      slug: '',
      user_agent: '',
      referrer: '',
      referrer_host: '',
      query: '',
    });
  });

  it('derives the UTM fields from the query and referrer_host from the referrer', async () => {
    const subdomain = uniqueName('utm');
    await publish(`${subdomain}-link`, [
      rawVisit(subdomain, {
        ts: '2025-06-03T00:00:00.001Z',
        query: 'utm_source=newsletter&utm_medium=email&utm_campaign=summer%20sale&utm_term=red+shoes&utm_content=hero&x=1',
        referrer: 'https://mail.example.com/inbox?id=7',
      }),
      rawVisit(subdomain, { ts: '2025-06-03T00:00:00.002Z', query: 'x=1', referrer: 'not a url' }),
    ]);
    const [tagged, plain] = await waitForVisits(subdomain, 2);
    expect(tagged).toMatchObject({
      utm_source: 'newsletter',
      utm_medium: 'email',
      utm_campaign: 'summer sale',
      utm_term: 'red shoes',
      utm_content: 'hero',
      referrer: 'https://mail.example.com/inbox?id=7',
      referrer_host: 'mail.example.com',
    });
    expect(plain).toMatchObject({ utm_source: '', utm_medium: '', utm_campaign: '', utm_term: '', utm_content: '', referrer: 'not a url', referrer_host: '' });
  });

  it('writes the enrichment into the row: geolocation, user agent, bot and attack classification', async () => {
    const subdomain = uniqueName('enriched');
    await publish(`${subdomain}-link`, [
      rawVisit(subdomain, {
        ts: '2025-06-06T00:00:00.001Z',
        ip_public: '81.2.69.142',
        user_agent: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
      }),
      rawVisit(subdomain, { ts: '2025-06-06T00:00:00.002Z', user_agent: 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)' }),
      rawVisit(subdomain, { ts: '2025-06-06T00:00:00.003Z', query: 'id=1%20UNION%20SELECT%20password%20FROM%20users' }),
    ]);
    const [person, crawler, injection] = await waitForVisits(subdomain, 3);
    expect(person).toMatchObject({
      kind: 'visit',
      country: 'GB',
      city: 'Bracknell',
      browser: 'Chrome',
      browser_version: '120',
      os: 'Windows',
      device_type: 'desktop',
      is_bot: 0,
    });
    expect(crawler).toMatchObject({ kind: 'bot', is_bot: 1, bot_name: 'google' });
    expect(injection).toMatchObject({ kind: 'attack', is_attack: 1, attack_type: 'sqli' });
    // Operational figures of the same work.
    const metric = async (name: string) => context.metrics.registry.getSingleMetricAsString(name);
    expect(await metric('visits_inserted_total')).toMatch(/^visits_inserted_total [1-9]\d*$/m);
    expect(await metric('visits_enriched_total')).toMatch(/visits_enriched_total\{kind="bot"\} [1-9]/);
    expect(await metric('visits_insert_batch_size')).toMatch(/visits_insert_batch_size_count [1-9]/);
    expect(await metric('visits_insert_duration_seconds')).toMatch(/visits_insert_duration_seconds_count [1-9]/);
  });

  it('flags bot and attack visits', async () => {
    const subdomain = uniqueName('kinds');
    await publish(`${subdomain}-link`, [
      rawVisit(subdomain, { ts: '2025-06-04T00:00:00.001Z', kind: 'bot' }),
      rawVisit(subdomain, { ts: '2025-06-04T00:00:00.002Z', kind: 'attack' }),
    ]);
    const rows = await waitForVisits(subdomain, 2);
    expect(rows.map(({ kind, is_bot, is_attack }) => ({ kind, is_bot, is_attack }))).toEqual([
      { kind: 'bot', is_bot: 1, is_attack: 0 },
      { kind: 'attack', is_bot: 0, is_attack: 1 },
    ]);
  });

  it('sends undecodable and invalid messages to visits.dlq with x-dlq-reason, x-dlq-source and x-dlq-at, without holding back the valid ones of the batch', async () => {
    const subdomain = uniqueName('dlq');
    const key = `${subdomain}-link`;
    const dead = await deadLetters(key);
    const valid = [rawVisit(subdomain, { ts: '2025-06-05T00:00:00.001Z' }), rawVisit(subdomain, { ts: '2025-06-05T00:00:00.002Z' })];
    const undecodable = '{"visit_id": "truncated';
    const invalid = JSON.stringify(rawVisit(subdomain, { visit_id: 'not-a-uuid' }));
    // One publish, one key: the four messages travel in one batch.
    await context.messageLog.publish(TOPICS.visitsRaw, [
      { key, value: JSON.stringify(valid[0]) },
      { key, value: undecodable, headers: { 'x-origin': 'edge-1' } },
      { key, value: invalid, headers: { 'x-origin': 'edge-2' } },
      { key, value: JSON.stringify(valid[1]) },
    ]);
    const rows = await waitForVisits(subdomain, 2);
    expect(rows.map((row) => row.visit_id)).toEqual(valid.map((visit) => visit.visit_id));
    await waitFor(() => dead.length >= 2, DEADLINE_MS, { message: 'two dead letters' });
    expect(dead).toHaveLength(2);
    const before = Date.now();
    expect(dead[0]).toEqual({
      key,
      value: undecodable,
      headers: {
        'x-origin': 'edge-1',
        'x-dlq-reason': 'undecodable JSON',
        'x-dlq-source': 'visits.raw',
        'x-dlq-at': expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
      },
    });
    expect(Date.parse(dead[0]!.headers!['x-dlq-at']!)).toBeLessThanOrEqual(before);
    expect(dead[1]).toMatchObject({ key, value: invalid, headers: { 'x-origin': 'edge-2' } });
    expect(dead[1]!.headers!['x-dlq-reason']).toMatch(/^invalid visit: visit_id: /);
  });

  it('dead-letters a visit ClickHouse cannot store (text that is not well-formed Unicode) instead of retrying it forever', async () => {
    const subdomain = uniqueName('unicode');
    const key = `${subdomain}-link`;
    const dead = await deadLetters(key);
    const poison = rawVisit(subdomain, { ts: '2025-06-06T00:00:00.001Z', user_agent: 'Mozilla \ud800' });
    const after = rawVisit(subdomain, { ts: '2025-06-06T00:00:00.002Z' });
    await publish(key, [poison]);
    await publish(key, [after]);
    const rows = await waitForVisits(subdomain, 1);
    expect(rows.map((row) => row.visit_id)).toEqual([after.visit_id]);
    await waitFor(() => dead.length >= 1, DEADLINE_MS, { message: 'the dead letter' });
    expect(JSON.parse(dead[0]!.value)).toEqual(poison);
    expect(dead[0]!.headers!['x-dlq-reason']).toMatch(/^invalid visit: user_agent: /);
  });

  it('stores a visit published twice as one row under FINAL', async () => {
    const subdomain = uniqueName('twice');
    const key = `${subdomain}-link`;
    const visit = rawVisit(subdomain, { ts: '2025-06-07T00:00:00.001Z' });
    const sameBatch = rawVisit(subdomain, { ts: '2025-06-07T00:00:00.002Z' });
    const sentinel = rawVisit(subdomain, { ts: '2025-06-07T00:00:00.003Z' });
    await publish(key, [visit]);
    await publish(key, [visit]);
    await publish(key, [sameBatch, sameBatch]);
    // Same key, same partition, in order: once the sentinel is stored, both copies were handled.
    await publish(key, [sentinel]);
    await waitFor(async () => (await visitsOf(subdomain)).some((row) => row.visit_id === sentinel.visit_id), DEADLINE_MS, {
      message: 'the sentinel visit',
    });
    const rows = await visitsOf(subdomain);
    expect(rows.map((row) => row.visit_id)).toEqual([visit.visit_id, sameBatch.visit_id, sentinel.visit_id]);
  });

  it('skips a batch of the same visits inserted a second time, even re-enriched differently (the first stored wins)', async () => {
    const subdomain = uniqueName('versions');
    const visit = RawVisitSchema.parse(rawVisit(subdomain, { ts: '2025-06-08T00:00:00.000Z' }));
    const other = RawVisitSchema.parse(rawVisit(subdomain, { ts: '2025-06-08T00:00:01.000Z' }));
    await insertVisits(createRepositories(context), [visit], plain);
    await insertVisits(createRepositories(context), [visit], plain);
    expect(await visitsOf(subdomain, { final: false })).toHaveLength(1);
    await insertVisits(createRepositories(context), [{ ...visit, user_agent: 're-enriched after a restart' }], plain);
    expect(await visitsOf(subdomain, { final: false })).toHaveLength(1);
    // Another set of visits is another batch, even when it includes a stored one.
    // (Its copy of the stored visit collapses with the first by visit_id: counting raw rows would race the merges.)
    await insertVisits(createRepositories(context), [visit, other], plain);
    expect((await visitsOf(subdomain)).map((row) => row.visit_id)).toEqual([visit.visit_id, other.visit_id]);
  });

  it('redelivers a batch whose ClickHouse insert failed and stores it once when ClickHouse takes writes again', async () => {
    const subdomain = uniqueName('outage');
    const key = `${subdomain}-link`;
    const held = uniqueName('visits_held').replace(/-/g, '_');
    const visits = [rawVisit(subdomain, { ts: '2025-06-08T00:00:00.001Z' }), rawVisit(subdomain, { ts: '2025-06-08T00:00:00.002Z' })];
    // A real failure of the store: the table is away while the batch arrives.
    await renameTable('visits', held);
    try {
      await publish(key, visits);
      const outageEnds = Date.now() + 1_500;
      // Inserts fail meanwhile (the enricher retries); nothing lands in the renamed table either.
      await waitFor(() => Date.now() >= outageEnds, 3_000);
      const inHeld = await context.analytics.client.query({
        query: `SELECT count() AS n FROM ${held} WHERE subdomain = {subdomain:String}`,
        query_params: { subdomain },
        format: 'JSONEachRow',
      });
      expect(await inHeld.json()).toEqual([{ n: 0 }]);
    } finally {
      await renameTable(held, 'visits');
    }
    const rows = await waitForVisits(subdomain, 2);
    expect(rows.map((row) => row.visit_id)).toEqual(visits.map((visit) => visit.visit_id));
    expect(await visitsOf(subdomain, { final: false })).toHaveLength(2);
  });
});
