import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Analytics } from '#shared/analytics/analytics.js';
import type { Context } from '#shared/context.js';
import { decodeEvents, type PlatformEvent } from '#shared/events/events.js';
import { closeContext, createTestContext, SERVICES_MODE, uniqueName } from '#tests/support/context.js';
import { claimSubdomain, createOwner, subscribeToVisitEvents, type TestOwner } from '#tests/support/owners.js';
import { consentMessage, peopleVisits, subdomainWithLink } from '#tests/support/visits.js';
import { waitFor } from '#tests/support/wait.js';
import { TOPICS } from '#shared/message-log/topics.js';
import type { Consumer, LogMessage } from '#shared/message-log/message-log.js';
import { buildApp } from '../app.js';
import { startVisitConsumer } from './visit-consumer.js';

/**
 * No visit lost, whatever fails (issue 24): a message that makes a stage throw goes to the
 * dead-letter topic alone and its partition keeps moving; an analytics store that refuses inserts
 * for a while holds the batches back, and nothing is dead-lettered. Each test prints a
 * `FAULT_ROW {…}` line for the table of faults in docs/operations.md.
 *
 * The poison is injected: the one real valid-but-poison visit found (a time outside DateTime64's
 * range, e.g. year 0000: no Postgres date for the day's salt) is now refused by the decoder, and
 * is sent here as one more invalid message.
 */

/** Kafka consumer-group joins and kafkajs restarts after a failed batch take seconds. */
const DEADLINE_MS = 45_000;
/** How long the analytics insert is refused in the systemic-failure test. */
const OUTAGE_MS = 2_000;

let context: Context;
let app: FastifyInstance;
let owner: TestOwner;
let enricher: Consumer;
const consumers: Consumer[] = [];
/** Every event on the bus since the start. */
const events: PlatformEvent[] = [];
/** Every message on the dead-letter topic since the start. */
const deadLetters: LogMessage[] = [];

/** Fault injection: visits whose rows ClickHouse is made unable to parse (their time replaced by text). */
const poisonIds = new Set<string>();
/** Fault injection: inserts into `visits` are refused as by a server that is down until this time (ms). */
let refuseUntil = 0;
let insertsRefused = 0;

/**
 * The context of the enricher: the real stores, with the analytics insert wrapped to inject the
 * faults above. A poison row is mangled so that chDB itself refuses the insert (a real ClickHouse
 * data error, Code 41), as it would refuse a value it cannot parse.
 */
function faultyContext(real: Context): Context {
  const insertEncoded: Analytics['insertEncoded'] = async (insert) => {
    if (insert.table === 'visits' && Date.now() < refuseUntil) {
      insertsRefused++;
      throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8123 (injected)'), { code: 'ECONNREFUSED', syscall: 'connect' });
    }
    let { body } = insert;
    if (insert.table === 'visits' && poisonIds.size > 0) {
      let text = body.toString('utf8');
      for (const id of poisonIds) text = text.replace(new RegExp(`(\\["${id}",")[^"]+`), '$1not a time');
      body = Buffer.from(text, 'utf8');
    }
    return real.analytics.insertEncoded({ ...insert, body });
  };
  return { ...real, analytics: { ...real.analytics, insertEncoded } };
}

beforeAll(async () => {
  context = await createTestContext();
  ({ app } = await buildApp(context));
  owner = await createOwner(context, app);
  await subscribeToVisitEvents(context, owner.id);
  enricher = await startVisitConsumer(faultyContext(context));
  consumers.push(
    await context.messageLog.consume({
      groupId: uniqueName('events-reader'),
      topic: TOPICS.events,
      handler: async (messages) => void events.push(...messages.flatMap(decodeEvents)),
    }),
    await context.messageLog.consume({
      groupId: uniqueName('dlq-reader'),
      topic: TOPICS.visitsDlq,
      handler: async (messages) => void deadLetters.push(...messages),
    }),
  );
});

afterAll(async () => {
  // In parallel: a Kafka consumer's stop waits out its long-poll fetch (up to 5 s).
  await Promise.all([enricher?.stop(), ...consumers.map((consumer) => consumer.stop())]);
  await app?.close();
  await closeContext(context);
});

/** `count` people's visits of the owner's link, each of its own visitor (`net`.1, .2, …). */
const visitsOf = (subdomain: string, linkId: string, count: number, net = '198.51.100') => peopleVisits(owner.id, subdomain, linkId, count, { net });

/** Log messages of visits (or raw text), keyed by link as the edge publishes them. */
const messagesOf = (linkId: string, values: (Record<string, unknown> | string)[]): LogMessage[] =>
  values.map((value) => ({ key: linkId, value: typeof value === 'string' ? value : JSON.stringify(value) }));

async function scalar(query: string, params: Record<string, unknown>): Promise<number> {
  const result = await context.analytics.client.query({ query, query_params: params, format: 'JSONEachRow' });
  return Number(Object.values((await result.json<Record<string, unknown>>())[0]!)[0]);
}

/** What `visits` and the rollups hold of a subdomain: distinct visits, version-0 rows, and the hourly and daily counts. */
async function counts(subdomain: string) {
  const params = { subdomain, owner: owner.id };
  return {
    final: await scalar('SELECT count() FROM visits FINAL WHERE subdomain = {subdomain:String}', params),
    rows_version_0: await scalar('SELECT count() FROM visits WHERE subdomain = {subdomain:String} AND version = 0', params),
    stats_series: await scalar(
      `SELECT sum(visits) FROM stats_series WHERE owner_id = {owner:String} AND scope = 'subdomain' AND scope_id = {subdomain:String}`,
      params,
    ),
    stats_series_daily: await scalar(
      `SELECT sum(visits) FROM stats_series_daily WHERE owner_id = {owner:String} AND scope = 'subdomain' AND scope_id = {subdomain:String}`,
      params,
    ),
  };
}

/** Each place counts `n`. */
const everywhere = (n: number) => ({ final: n, rows_version_0: n, stats_series: n, stats_series_daily: n });

/** The visit.new events about the visits, as received (repeats included). */
const visitNewAbout = (visits: { visit_id: string }[]) => {
  const ids = new Set(visits.map((visit) => visit.visit_id));
  return events.filter((event) => event.type === 'visit.new' && ids.has((event.data as { visit_id: string }).visit_id));
};

/** The dead letters published under a key (a link id, or a beacon's visit id). */
const deadLettersOf = (key: string) => deadLetters.filter((message) => message.key === key);

/** visits_dead_lettered_total, by reason. */
async function deadLetteredTotals(): Promise<Record<string, number>> {
  const { values } = await context.metrics.visitsDeadLettered.get();
  return Object.fromEntries(values.map(({ labels, value }) => [String(labels.reason), value]));
}

const deltaOf = (before: Record<string, number>, after: Record<string, number>) =>
  Object.fromEntries(
    Object.keys(after).flatMap((reason) => (after[reason]! - (before[reason] ?? 0) > 0 ? [[reason, after[reason]! - (before[reason] ?? 0)]] : [])),
  );

/** The enricher's consumer of visits.raw, as the health probe sees it. */
async function enricherStatus() {
  return (await context.messageLog.consumers()).find((status) => status.group === 'enricher' && status.topic === TOPICS.visitsRaw)!;
}

/** Waits for a settled moment, then for what is counted to stay as it is (no late duplicates). */
const settle = () => new Promise((resolve) => setTimeout(resolve, 1_000));

describe(`poison messages and a failing analytics store (${SERVICES_MODE ? 'Kafka' : 'durable log'}, chDB)`, { timeout: 120_000 }, () => {
  it('dead-letters a valid visit that makes the insert fail (fault injected: ClickHouse cannot parse its time) and an undecodable message, stores every other visit once, and the partition keeps moving', async () => {
    const { subdomain, linkId } = await subdomainWithLink(app, owner);
    const valid = visitsOf(subdomain, linkId, 30);
    const later = visitsOf(subdomain, linkId, 10, '192.0.2');
    const [poison] = visitsOf(subdomain, linkId, 1, '203.0.113');
    const [yearZero] = visitsOf(subdomain, linkId, 1, '203.0.114').map((visit) => ({ ...visit, ts: '0000-01-01T00:00:00Z' }));
    poisonIds.add(poison!.visit_id);
    const totalsBefore = await deadLetteredTotals();
    const started = Date.now();
    // One publish: the poison and the undecodable message in the batch(es) of the valid visits.
    await context.messageLog.publish(
      TOPICS.visitsRaw,
      messagesOf(linkId, [...valid.slice(0, 12), poison!, '{"visit_id": undecodable', ...valid.slice(12), yearZero!]),
    );
    // Published after the poison, on its partition (same key): stored only if the partition moves on.
    await context.messageLog.publish(TOPICS.visitsRaw, messagesOf(linkId, later));
    const stored = [...valid, ...later];
    await waitFor(
      async () => (await counts(subdomain)).final >= stored.length && deadLettersOf(linkId).length >= 3 && visitNewAbout(stored).length >= stored.length,
      DEADLINE_MS,
      {
        message: 'every valid visit stored, the three dead letters published and the events raised',
      },
    );
    const settledMs = Date.now() - started;
    await settle();

    const counted = await counts(subdomain);
    const dead = deadLettersOf(linkId);
    const raised = visitNewAbout(stored);
    process.stdout.write(
      `FAULT_ROW ${JSON.stringify({ fault: 'poison: a valid visit the insert fails on (injected), an undecodable message and a year-0000 visit among 40 valid ones', sent: stored.length, stored: counted.final, duplicates: counted.rows_version_0 - counted.final, lost: stored.length - counted.final, dead_lettered: dead.length, visit_new_events: raised.length, recover_ms: settledMs })}\n`,
    );
    expect(counted).toEqual(everywhere(stored.length));
    expect(raised).toHaveLength(stored.length);
    expect(new Set(raised.map((event) => event.id)).size).toBe(stored.length);
    expect(visitNewAbout([poison!, yearZero!])).toHaveLength(0);
    // Each dead letter unchanged, with its reason; the poison's names its stage and ClickHouse's error.
    expect(dead).toHaveLength(3);
    const byValue = new Map(dead.map((message) => [message.value, message.headers ?? {}]));
    expect(byValue.get(JSON.stringify(poison))).toMatchObject({
      'x-dlq-stage': 'store',
      'x-dlq-reason': expect.stringMatching(/^store stage failed: \w+: Code: 41\. DB::Exception: Cannot read DateTime/),
    });
    expect(byValue.get('{"visit_id": undecodable')).toMatchObject({ 'x-dlq-reason': 'undecodable JSON' });
    expect(byValue.get(JSON.stringify(yearZero))).toMatchObject({ 'x-dlq-reason': expect.stringMatching(/^invalid visit: ts: outside 1900/) });
    expect(deltaOf(totalsBefore, await deadLetteredTotals())).toEqual({ stage_failed: 1, undecodable: 1, invalid: 1 });
    expect((await enricherStatus()).last_error).toBeNull();
  });

  it('stores every visit exactly once when the analytics insert fails for a while (fault injected: connection refused for 2 s), dead-letters nothing, and the consumer status shows the failure while it lasts', async () => {
    const { subdomain, linkId } = await subdomainWithLink(app, owner);
    const visits = visitsOf(subdomain, linkId, 50);
    const totalsBefore = await deadLetteredTotals();
    const refusedBefore = insertsRefused;
    refuseUntil = Date.now() + OUTAGE_MS;
    await context.messageLog.publish(TOPICS.visitsRaw, messagesOf(linkId, visits.slice(0, 25)));
    // While the store is down: the consumer says so, and more visits arrive.
    const failing = await waitFor(async () => (await enricherStatus()).last_error ?? undefined, OUTAGE_MS, { message: 'the failure in the consumer status' });
    expect(failing).toMatch(/ECONNREFUSED/);
    await context.messageLog.publish(TOPICS.visitsRaw, messagesOf(linkId, visits.slice(25)));
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, refuseUntil - Date.now())));
    const recovered = Date.now();
    await waitFor(async () => (await counts(subdomain)).final >= visits.length && visitNewAbout(visits).length >= visits.length, DEADLINE_MS, {
      message: 'every visit stored after the outage',
    });
    const recoverMs = Date.now() - recovered;
    await settle();

    const counted = await counts(subdomain);
    const raised = visitNewAbout(visits);
    process.stdout.write(
      `FAULT_ROW ${JSON.stringify({ fault: `analytics insert refused for ${OUTAGE_MS / 1000} s (injected ECONNREFUSED), then back`, sent: visits.length, stored: counted.final, duplicates: counted.rows_version_0 - counted.final, lost: visits.length - counted.final, dead_lettered: deadLettersOf(linkId).length, visit_new_events: raised.length, inserts_refused: insertsRefused - refusedBefore, recover_ms: recoverMs })}\n`,
    );
    expect(insertsRefused).toBeGreaterThan(refusedBefore);
    expect(counted).toEqual(everywhere(visits.length));
    expect(raised).toHaveLength(visits.length);
    expect(new Set(raised.map((event) => event.id)).size).toBe(visits.length);
    expect(deadLettersOf(linkId)).toEqual([]);
    expect(deltaOf(totalsBefore, await deadLetteredTotals())).toEqual({});
    // Cleared by the first batch that went through.
    expect((await enricherStatus()).last_error).toBeNull();
  });

  it('dead-letters a consent beacon whose own visit makes the insert fail (fault injected), and stores the visits of the beacons around it', async () => {
    const subdomain = await claimSubdomain(app, owner);
    const beacons = Array.from({ length: 12 }, (_, i) => consentMessage(subdomain, i));
    const poison = beacons[5]!;
    poisonIds.add(poison.key);
    const started = Date.now();
    await context.messageLog.publish(TOPICS.trackerRaw, beacons);
    await waitFor(
      async () =>
        (await scalar('SELECT count() FROM visits FINAL WHERE subdomain = {subdomain:String} AND version > 0', { subdomain })) >= 11 &&
        deadLettersOf(poison.key).length >= 1,
      DEADLINE_MS,
      {
        message: 'the other visits stored with their consent, and the poison dead-lettered',
      },
    );
    const settledMs = Date.now() - started;
    await settle();
    const counted = await counts(subdomain);
    process.stdout.write(
      `FAULT_ROW ${JSON.stringify({ fault: 'poison: a consent beacon whose own visit the insert fails on (injected), among 12', sent: 11, stored: counted.final, duplicates: counted.stats_series - counted.final, lost: 11 - counted.final, dead_lettered: deadLettersOf(poison.key).length, recover_ms: settledMs })}\n`,
    );
    expect(counted.final).toBe(11);
    expect(counted.stats_series).toBe(11);
    expect(deadLettersOf(poison.key)).toHaveLength(1);
    expect(deadLettersOf(poison.key)[0]!.headers).toMatchObject({
      'x-dlq-topic': TOPICS.trackerRaw,
      'x-dlq-stage': 'own_visit',
      'x-dlq-reason': expect.stringMatching(/^own_visit stage failed: .*Code: 41\./),
    });
  });
});
