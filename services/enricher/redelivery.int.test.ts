import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClickHouseClient } from '@clickhouse/client';
import type { Context } from '#shared/context.js';
import { decodeEvents, eventId, type PlatformEvent } from '#shared/events/events.js';
import { closeContext, createTestContext, SERVICES_MODE, uniqueName } from '#tests/support/context.js';
import { claimSubdomain, createOwner, subscribeToVisitEvents, type TestOwner } from '#tests/support/owners.js';
import { consentMessage, peopleVisits, subdomainWithLink } from '#tests/support/visits.js';
import { waitFor } from '#tests/support/wait.js';
import { TOPICS, type Topic } from '#shared/message-log/topics.js';
import type { BatchControl, ConsumeOptions, Consumer, LogMessage, MessageLog } from '#shared/message-log/message-log.js';
import { createSpool } from '#shared/message-log/spool.js';
import { createMetrics } from '#shared/metrics.js';
import { buildApp } from '../app.js';
import { startVisitConsumer } from './visit-consumer.js';
import { STORED_VISITS_QUERY } from '#shared/analytics/visits.repository.js';

/**
 * Exactly once into `visits` and the rollups (issue 24): a visit redelivered inside a batch composed
 * otherwise than the first time (after a crash between the insert and the offset commit) carried
 * another deduplication token, so the rollup views counted it again. These tests fail without the
 * enricher's check of redelivered batches against what is stored.
 */

/** Kafka consumer-group joins and kafkajs restarts after a failed batch take seconds. */
const DEADLINE_MS = 45_000;

let context: Context;
let app: FastifyInstance;
let owner: TestOwner;
let enricher: Consumer;
const consumers: Consumer[] = [];
/** The enricher's batch handlers, by topic, as it gave them to the message log. */
const handlers = new Map<Topic, ConsumeOptions['handler']>();
/** The SQL text of every query the enricher sent to ClickHouse. */
const queries: string[] = [];
/** Fault injection: the check for stored visits fails while this is set (a ClickHouse that does not answer it). */
let failStoredCheck = false;
/** Every event on the bus since the start. */
const events: PlatformEvent[] = [];

/**
 * A context for the enricher whose message log and ClickHouse client are the real ones, watched: the
 * log hands out the enricher's handlers (to hand a batch over again, flagged redelivered, as a log
 * does after a crash), and the client records the queries (and refuses the stored-visits check
 * while failStoredCheck is set).
 */
function watchedContext(real: Context): Context {
  const client = new Proxy(real.analytics.client, {
    get(target, property) {
      if (property === 'query') {
        return (params: Parameters<ClickHouseClient['query']>[0]) => {
          queries.push(params.query);
          if (failStoredCheck && params.query === STORED_VISITS_QUERY) return Promise.reject(new Error('injected failure: ClickHouse did not answer'));
          return target.query(params);
        };
      }
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  const messageLog = {
    ...real.messageLog,
    consume: async (options: ConsumeOptions) => {
      handlers.set(options.topic, options.handler);
      return real.messageLog.consume(options);
    },
  };
  return { ...real, analytics: { ...real.analytics, client }, messageLog };
}

beforeAll(async () => {
  context = await createTestContext();
  ({ app } = await buildApp(context));
  owner = await createOwner(context, app);
  await subscribeToVisitEvents(context, owner.id);
  enricher = await startVisitConsumer(watchedContext(context));
  consumers.push(
    await context.messageLog.consume({
      groupId: uniqueName('events-reader'),
      topic: TOPICS.events,
      handler: async (messages) => void events.push(...messages.flatMap(decodeEvents)),
    }),
  );
});

afterAll(async () => {
  await Promise.all([enricher?.stop(), ...consumers.map((consumer) => consumer.stop())]);
  await app?.close();
  await closeContext(context);
});

/**
 * Renames a table, retried: under a loaded machine chDB's Atomic database now and then answers a
 * rename with ATOMIC_RENAME_FAIL (its metadata file busy), which says nothing of the enricher.
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

/** A DDL statement, retried as renameTable is (chDB's Atomic database now and then answers it busy). */
async function ddl(query: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await context.analytics.client.command({ query });
      return;
    } catch (error) {
      if (attempt >= 5 || !/ATOMIC_RENAME_FAIL|TABLE_IS_DROPPED|busy/i.test(String(error))) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
    }
  }
}

/** A control as the message log gives it with a batch. */
const control = (redelivered: boolean): BatchControl => ({ heartbeat: async () => undefined, stopping: () => false, redelivered });

/** `count` people's visits of the owner's link. */
const visitsOf = (subdomain: string, linkId: string, count: number, overrides: Record<string, unknown> = {}) =>
  peopleVisits(owner.id, subdomain, linkId, count, overrides);

/** Log messages of visits, keyed by link as the edge publishes them. */
const messagesOf = (visits: Record<string, unknown>[]): LogMessage[] => visits.map((visit) => ({ key: String(visit.link_id), value: JSON.stringify(visit) }));

async function scalar(query: string, params: Record<string, unknown>): Promise<number> {
  const result = await context.analytics.client.query({ query, query_params: params, format: 'JSONEachRow' });
  return Number(Object.values((await result.json<Record<string, unknown>>())[0]!)[0]);
}

/** What each place a visit is counted in says about a subdomain. */
async function counts(subdomain: string) {
  const params = { subdomain, owner: owner.id };
  const report = await app.inject({ method: 'GET', url: `/api/v1/stats/subdomain/${subdomain}`, headers: owner.auth });
  if (report.statusCode !== 200) throw new Error(report.body);
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
    stats_dims: await scalar(
      `SELECT sum(visits) FROM stats_dims WHERE owner_id = {owner:String} AND subdomain = {subdomain:String} AND dim = 'browser'`,
      params,
    ),
    stats_dims_daily: await scalar(
      `SELECT sum(visits) FROM stats_dims_daily WHERE owner_id = {owner:String} AND subdomain = {subdomain:String} AND dim = 'browser'`,
      params,
    ),
    stats_cube_daily: await scalar(`SELECT sum(visits) FROM stats_cube_daily WHERE owner_id = {owner:String} AND subdomain = {subdomain:String}`, params),
    stats_cube: await scalar(`SELECT sum(visits) FROM stats_cube WHERE owner_id = {owner:String} AND subdomain = {subdomain:String}`, params),
    stats_api: report.json().data.totals.visits as number,
  };
}

/** Each place counts `n`. */
const everywhere = (n: number) => ({
  final: n,
  rows_version_0: n,
  stats_series: n,
  stats_series_daily: n,
  stats_dims: n,
  stats_dims_daily: n,
  stats_cube_daily: n,
  stats_cube: n,
  stats_api: n,
});

/** The events of a type about the visits, as received (repeats included). */
const eventsAbout = (type: PlatformEvent['type'], visits: Record<string, unknown>[]) => {
  const ids = new Set(visits.map((visit) => String(visit.visit_id)));
  return events.filter((event) => event.type === type && ids.has((event.data as { visit_id: string }).visit_id));
};

/** The stable id the enricher gives a visit's event. */
const idOf = (type: PlatformEvent['type'], visit: Record<string, unknown>) => eventId(type, { key: String(visit.visit_id), at: Date.parse(String(visit.ts)) });

async function deduplicatedTotal(): Promise<number> {
  return (await context.metrics.visitsDeduplicated.get()).values[0]?.value ?? 0;
}

describe(`exactly once into visits and the rollups (${SERVICES_MODE ? 'Kafka' : 'in-process log'}, chDB)`, { timeout: 120_000 }, () => {
  it('counts a visit redelivered in a differently composed batch once: in visits, in every rollup and in the statistics, its events raised again with the same ids', async () => {
    const { subdomain, linkId } = await subdomainWithLink(app, owner);
    const first = visitsOf(subdomain, linkId, 10);
    await context.messageLog.publish(TOPICS.visitsRaw, messagesOf(first));
    // The first delivery, finished: stored, and its events on the bus.
    await waitFor(() => eventsAbout('visit.new', first).length >= 10, DEADLINE_MS, { message: 'the first delivery' });
    expect(await counts(subdomain)).toEqual(everywhere(10));
    const dedupedBefore = await deduplicatedTotal();

    // The crash came after the insert, before the commit: the log hands six of those visits over
    // again, now in one batch with three it had not handed over yet (another token: ClickHouse's
    // insert deduplication does not see it).
    const later = visitsOf(subdomain, linkId, 3, { ip_public: '192.0.2.77' }).map((visit, i) => ({
      ...visit,
      ts: new Date(Date.now() - 60_000 + i).toISOString(),
    }));
    const again = [...first.slice(4), ...later];
    await handlers.get(TOPICS.visitsRaw)!(messagesOf(again), control(true));

    expect(await counts(subdomain)).toEqual(everywhere(13));
    expect((await deduplicatedTotal()) - dedupedBefore).toBe(6);
    await waitFor(() => eventsAbout('visit.new', later).length >= 3, DEADLINE_MS, { message: 'the events of the redelivered batch' });
    // visit.new: raised again for the six, with the ids of the first time (the webhook delivery's
    // job id is derived from it: receivers get each once); one id per visit.
    const raised = eventsAbout('visit.new', [...first, ...later]);
    expect(raised).toHaveLength(10 + 6 + 3);
    expect(new Set(raised.map((event) => event.id))).toEqual(new Set([...first, ...later].map((visit) => idOf('visit.new', visit))));
    // Judged as the first time: every one of the first ten visitors was unique, and stays so.
    const unique = eventsAbout('visit.unique', first);
    expect(unique).toHaveLength(16);
    expect(new Set(unique.map((event) => event.id)).size).toBe(10);
    // The three later visits share one visitor: the first of them is unique.
    expect(eventsAbout('visit.unique', later).map((event) => (event.data as { visit_id: string }).visit_id)).toEqual([later[0]!.visit_id]);
  });

  it('counts once the visits of a batch that failed after its insert and came back through the log with more visits', async () => {
    const { subdomain, linkId } = await subdomainWithLink(app, owner);
    const held = uniqueName('visit_beacons_held').replace(/-/g, '_');
    // A real failure after the insert: the beacon merge that follows it finds no visit_beacons table.
    const first = visitsOf(subdomain, linkId, 8, { expects_beacon: true });
    const more = visitsOf(subdomain, linkId, 4, { ip_public: '192.0.2.10' }).map((visit, i) => ({
      ...visit,
      ts: new Date(Date.now() - 60_000 + i).toISOString(),
    }));
    await renameTable('visit_beacons', held);
    try {
      await context.messageLog.publish(TOPICS.visitsRaw, messagesOf(first));
      await waitFor(async () => (await scalar('SELECT count() FROM visits WHERE subdomain = {subdomain:String}', { subdomain })) >= 8, DEADLINE_MS, {
        message: 'the first insert',
      });
      // While the batch fails and comes back, more visits arrive: the next delivery holds both.
      await context.messageLog.publish(TOPICS.visitsRaw, messagesOf(more));
      await waitFor(async () => (await scalar('SELECT count() FROM visits WHERE subdomain = {subdomain:String}', { subdomain })) >= 12, DEADLINE_MS, {
        message: 'the redelivered batch with the later visits inserted',
      });
    } finally {
      await renameTable(held, 'visit_beacons');
    }
    await waitFor(() => eventsAbout('visit.new', more).length >= 4, DEADLINE_MS, { message: 'the batch finished' });
    expect(await counts(subdomain)).toEqual(everywhere(12));
    expect(new Set(eventsAbout('visit.new', [...first, ...more]).map((event) => event.id)).size).toBe(12);
  });

  it('counts once, in every rollup, the visits of an insert cut between visits and its views, redelivered in another composition', async () => {
    const { subdomain, linkId } = await subdomainWithLink(app, owner);
    const first = visitsOf(subdomain, linkId, 8);
    // The insert's part in `visits` committed, its views' parts not (the process running chDB died
    // in between, or a view's write failed): the first-level views are detached meanwhile.
    const views = ['stats_series_mv', 'stats_dims_mv'];
    for (const view of views) await ddl(`DETACH TABLE ${view}`);
    try {
      await handlers.get(TOPICS.visitsRaw)!(messagesOf(first), control(false));
    } finally {
      for (const view of views) await ddl(`ATTACH TABLE ${view}`);
    }
    expect(await counts(subdomain)).toMatchObject({ final: 8, stats_series: 0, stats_dims: 0 });
    const dedupedBefore = await deduplicatedTotal();
    // Redelivered with two visits more: the five stored are left out of the insert, and the block
    // that stored them goes in again, whole (all eight) and with its token: `visits` drops it, the
    // views that missed it count it.
    const later = visitsOf(subdomain, linkId, 2, { ip_public: '192.0.2.33' }).map((visit, i) => ({
      ...visit,
      ts: new Date(Date.now() - 60_000 + i).toISOString(),
    }));
    await handlers.get(TOPICS.visitsRaw)!(messagesOf([...first.slice(3), ...later]), control(true));
    expect(await counts(subdomain)).toEqual(everywhere(10));
    expect((await deduplicatedTotal()) - dedupedBefore).toBe(5);
    // Handed over again as it was: nothing changes anywhere.
    await handlers.get(TOPICS.visitsRaw)!(messagesOf([...first.slice(3), ...later]), control(true));
    expect(await counts(subdomain)).toEqual(everywhere(10));
  });

  it('counts a beacon-started visit redelivered in another composition once', async () => {
    const subdomain = await claimSubdomain(app, owner);
    const consent = (i: number) => consentMessage(subdomain, i);
    const first = [0, 1, 2, 3, 4].map(consent);
    await context.messageLog.publish(TOPICS.trackerRaw, first);
    // Stored, and merged with its own consent (a newer version of each visit).
    await waitFor(
      async () => (await scalar('SELECT count() FROM visits WHERE subdomain = {subdomain:String} AND version > 0', { subdomain })) >= 5,
      DEADLINE_MS,
      {
        message: 'the beacon-started visits and their merges',
      },
    );
    const dedupedBefore = await deduplicatedTotal();
    await handlers.get(TOPICS.trackerRaw)!([...first.slice(2), consent(5)], control(true));
    const counted = await counts(subdomain);
    expect({ ...counted, rows_version_0: undefined }).toEqual({ ...everywhere(6), rows_version_0: undefined });
    expect(counted.rows_version_0).toBeLessThanOrEqual(6);
    expect((await deduplicatedTotal()) - dedupedBefore).toBe(3);
  });

  it("counts once the visits an ingest node's forwarder sent again (Kafka acknowledged, the spool's commit lost), in one batch with newer ones", async () => {
    const { subdomain, linkId } = await subdomainWithLink(app, owner);
    const first = visitsOf(subdomain, linkId, 10);
    const later = visitsOf(subdomain, linkId, 3, { ip_public: '192.0.2.78' });
    const dedupedBefore = await deduplicatedTotal();
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let sends = 0;
    // The forwarder's first send reaches the log, then fails before the spool commits it (as a node
    // killed right after Kafka's ack): the spool sends those visits again, with the three after them.
    const target: MessageLog = {
      ...context.messageLog,
      async publish(topic, messages) {
        await context.messageLog.publish(topic, messages);
        if (++sends > 1) return;
        await released;
        throw new Error('the forwarder died after the ack (injected)');
      },
    };
    const spool = await createSpool(
      { dir: mkdtempSync(join(tmpdir(), 'linktrack-spool-')), maxBytes: 10_000_000, commitDelayMs: 5, retryDelayMs: 100 },
      target,
      context.log,
      createMetrics(),
    );
    try {
      await spool.publish(TOPICS.visitsRaw, messagesOf(first));
      await waitFor(() => eventsAbout('visit.new', first).length >= 10, DEADLINE_MS, { message: 'the first send stored' });
      await spool.publish(TOPICS.visitsRaw, messagesOf(later));
      release();
      await waitFor(() => eventsAbout('visit.new', later).length >= 3, DEADLINE_MS, { message: 'the second send stored' });
      await waitFor(async () => (await counts(subdomain)).stats_api >= 13, DEADLINE_MS, { message: 'the rollups' });
      expect(sends).toBe(2);
      expect(await counts(subdomain)).toEqual(everywhere(13));
      expect((await deduplicatedTotal()) - dedupedBefore).toBe(10);
    } finally {
      await spool.close();
    }
  });

  it('asks ClickHouse nothing about stored visits for a batch handed over the first time, and once for a redelivered one', async () => {
    const { subdomain, linkId } = await subdomainWithLink(app, owner);
    const handle = handlers.get(TOPICS.visitsRaw)!;
    const checks = () => queries.filter((query) => query === STORED_VISITS_QUERY).length;
    const before = checks();
    await handle(messagesOf(visitsOf(subdomain, linkId, 5)), control(false));
    expect(checks()).toBe(before);
    expect((await counts(subdomain)).final).toBe(5);
    await handle(messagesOf(visitsOf(subdomain, linkId, 5, { ip_public: '192.0.2.1' })), control(true));
    expect(checks()).toBe(before + 1);
    expect(await counts(subdomain)).toEqual(everywhere(10));
  });

  it('fails a redelivered batch when the check for stored visits fails, inserting nothing', async () => {
    const { subdomain, linkId } = await subdomainWithLink(app, owner);
    const visits = visitsOf(subdomain, linkId, 3);
    failStoredCheck = true;
    try {
      await expect(handlers.get(TOPICS.visitsRaw)!(messagesOf(visits), control(true))).rejects.toThrow(/injected failure/);
    } finally {
      failStoredCheck = false;
    }
    expect((await counts(subdomain)).final).toBe(0);
    expect(eventsAbout('visit.new', visits)).toHaveLength(0);
    // Handed over again, it is stored once.
    await handlers.get(TOPICS.visitsRaw)!(messagesOf(visits), control(true));
    expect(await counts(subdomain)).toEqual(everywhere(3));
  });
});
