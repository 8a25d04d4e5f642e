import { z } from 'zod';
import type { Context } from '#shared/context.js';
import { RawVisitSchema, type RawVisit } from '#shared/visits/raw-visit.js';
import { ENRICHER_GROUPS, TOPICS } from '#shared/message-log/topics.js';
import { batchRedelivered, type BatchControl, type Consumer, type LogMessage } from '#shared/message-log/message-log.js';
import { createEventBus, type EventDraft, type EventType, type LiveEventType } from '#shared/events/events.js';
import { matches, webhookCache, type WebhookCache } from '#shared/webhooks/subscriptions.js';
import type { WebhookRow } from '#shared/webhooks/webhooks.repository.js';
import { createRepositories, type Repositories } from '../repositories.js';
import { enrich, type Enrichment } from '#shared/visits/enrichment.js';
import { limitWatcher } from './limits.js';
import { dayOf, saltBook, uniqueVisitors } from './visitors.js';
import { visitorHash } from '#shared/visits/visitor-hash.js';
import { openGeoLookup } from '#shared/geo.js';
import type { StoredVisit } from '#shared/analytics/visits.repository.js';
import { insertVisits, reinsertStoredBlocks } from './visit-writer.js';
import { storedVisits } from '#shared/visits/visit-rows.js';
import { deadLetter, deadLetterPoisons, decodeMessage, type DeadLetter } from './decode.js';
import { beaconStore, startBeaconConsumer } from './beacon-consumer.js';
import { burstDetector } from './bursts.js';
import { orderedStages } from './stages.js';
import { isolatePoison } from './poison.js';
import { subdomainOwners } from './owners.js';
import { nextTurn, SLICE } from '#shared/turns.js';

/** The burst part of a security.suspicious event: the visitor's visits within the window. */
type BurstEvent = { visits: number; window_sec: number };

/** What became of one message: inserted, or sent to the dead-letter topic with the reason. */
export type Outcome = { kind: 'ok'; visit: RawVisit } | ({ kind: 'dlq' } & DeadLetter);

/**
 * The visit schema compiled (zod's `compile`): a generated parser checks and builds a valid visit in
 * one pass, about 0.15 µs against 0.9 µs for zod's runtime; a visit it refuses is parsed again by the
 * runtime, whose issues make the dead-letter reason. So it accepts, outputs and refuses exactly what
 * RawVisitSchema does (visit-decode.test.ts). `strict`: a change of the schema that zod cannot compile
 * fails at start-up, rather than leaving every visit on the slower runtime unnoticed.
 */
export const compiledRawVisitSchema = z.compile(RawVisitSchema, { strict: true });

/** Decodes and validates one message of `visits.raw`. Pure: no I/O. */
export function decodeVisit(message: LogMessage): Outcome {
  const decoded = decodeMessage(compiledRawVisitSchema, 'visit', message);
  return decoded.kind === 'ok' ? { kind: 'ok', visit: decoded.value } : decoded;
}

const ENRICHER_GROUP = ENRICHER_GROUPS[TOPICS.visitsRaw];

/** A batch of visits enriched and ready to be stored. */
interface Derived {
  visits: RawVisit[];
  /** What was derived of each visit, by its index in `visits`. */
  enrichments: Enrichment[];
  /** Each visit's time (ms), parsed once. */
  times: number[];
  /** The visits (by index) that start a burst. */
  burstsStarted: Map<number, BurstEvent>;
  /** People's visits of a link (neither bots, bursts nor attacks), in order: what `max_visits` counts. */
  people: RawVisit[];
  /** The batch may have been handed to a handler before (BatchControl.redelivered): its stored visits are left out of the insert. */
  redelivered: boolean;
}

/** A batch of messages as the message log hands it over. */
interface Delivery {
  messages: LogMessage[];
  redelivered: BatchControl['redelivered'];
  /** Called between the parts of a batch whose poison message is being isolated (a long batch). */
  heartbeat: BatchControl['heartbeat'];
}

/** A batch of `visits.raw` ready to be stored, with the messages that go to the dead-letter topic. */
interface PreparedBatch extends Derived {
  dead: DeadLetter[];
}

/**
 * Batches of `visits.raw` handled at once: one is prepared (decoded and enriched, on this thread)
 * while the one before is inserted (ClickHouse parses and writes on its own threads).
 */
const ENRICHER_CONCURRENCY = 2;

/**
 * Enriches a batch: the pure step per visit, then the visitor hash (the day's salt), the burst
 * signal (a visitor hammering one link: bots by behaviour) and, for human visits of a link,
 * whether it is the visitor's first visit to the link that day.
 */
async function deriveAll(
  visits: RawVisit[],
  redelivered: boolean,
  geo: Awaited<ReturnType<typeof openGeoLookup>>,
  salts: ReturnType<typeof saltBook>,
  uniques: ReturnType<typeof uniqueVisitors>,
  bursts: ReturnType<typeof burstDetector>,
): Promise<Derived> {
  const enrichments: Enrichment[] = [];
  const burstsStarted = new Map<number, BurstEvent>();
  // Each visit's time parsed once: its day (salt, uniques) and its instant (bursts).
  const times = visits.map((visit) => Date.parse(visit.ts));
  const days = times.map((time) => dayOf(time));
  const saltOf = new Map<string, string>();
  for (const day of new Set(days)) saltOf.set(day, await salts.saltFor(day));
  const humans: { visit: RawVisit; enrichment: Enrichment; day: string }[] = [];
  for (let index = 0; index < visits.length; index++) {
    if (index % SLICE === SLICE - 1) await nextTurn();
    const visit = visits[index]!;
    const day = days[index]!;
    const enrichment = enrich(visit, geo);
    enrichment.visitor_hash = visitorHash(saltOf.get(day)!, visit.ip_public, visit.user_agent);
    enrichment.is_unique = 0;
    if (enrichment.kind === 'visit' && visit.link_id !== '') {
      const judged = bursts.judge(visit.link_id, enrichment.visitor_hash, visit.visit_id, times[index]!);
      if (judged.burst) Object.assign(enrichment, { kind: 'bot', is_bot: 1, bot_name: 'burst' });
      else humans.push({ visit, enrichment, day });
      if (judged.started) burstsStarted.set(index, { visits: judged.visits, window_sec: bursts.windowSec });
    }
    enrichments.push(enrichment);
  }
  // Remembered as judged, before the batch is stored: the next batch is judged against it while
  // this one is written. If the batch fails, the memory of uniques (visitors.ts) forgets everything and asks ClickHouse again.
  const first = await uniques.firstOfDay(
    humans.map(({ visit, enrichment, day }) => ({
      visitId: visit.visit_id,
      subdomain: visit.subdomain,
      linkId: visit.link_id,
      hash: enrichment.visitor_hash!,
      day,
      ts: visit.ts,
    })),
  );
  humans.forEach(({ enrichment }, index) => {
    if (first[index]) enrichment.is_unique = 1;
  });
  return { visits, enrichments, times, burstsStarted, people: humans.map(({ visit }) => visit), redelivered };
}

/**
 * The part of a redelivered batch to insert: its visits `visits` does not hold yet (and each once).
 * A visit already stored is left out — the rollup views would count it again — and takes back what
 * was stored of it (its kind, bot and unique judgement, its owner), so the events it raises again
 * are those of the first time, with the same ids: a judgement that depends on what this process
 * remembers (bursts, uniques) may come out otherwise after a restart. Changes `batch` in place.
 */
async function leaveOutStored(
  repositories: Pick<Repositories, 'visits'>,
  batch: Derived,
): Promise<{ visits: RawVisit[]; enrichments: Enrichment[]; skipped: number; stored: Iterable<StoredVisit> }> {
  const stored = await storedVisits(repositories, batch.visits);
  const visits: RawVisit[] = [];
  const enrichments: Enrichment[] = [];
  const inserted = new Set<string>();
  batch.visits.forEach((visit, index) => {
    const id = visit.visit_id.toLowerCase();
    const row = stored.get(id);
    if (row) {
      const enrichment = batch.enrichments[index]!;
      Object.assign(enrichment, { kind: row.kind, is_bot: row.is_bot, bot_name: row.bot_name, is_unique: row.is_unique });
      // Only a visit stored as a burst can have started one (its event id is stable: raised again, it is the same event).
      if (row.bot_name !== 'burst') batch.burstsStarted.delete(index);
      if (row.owner_id !== visit.owner_id) batch.visits[index] = { ...visit, owner_id: row.owner_id };
    } else if (!inserted.has(id)) {
      inserted.add(id);
      visits.push(visit);
      enrichments.push(batch.enrichments[index]!);
    }
  });
  return { visits, enrichments, skipped: batch.visits.length - visits.length, stored: stored.values() };
}

/** The types of events a visit can raise, by what it is (eventsOf). */
const SUSPICIOUS: readonly LiveEventType[] = ['security.suspicious'];
const NEW: readonly LiveEventType[] = ['visit.new'];
const NEW_UNIQUE: readonly LiveEventType[] = ['visit.new', 'visit.unique'];
const NONE: readonly LiveEventType[] = [];

/**
 * The events a stored visit raises: visit.new (and visit.unique) for people, security.suspicious
 * for attacks (`reason: "attack"`) and for the visit that starts a burst (`reason: "burst"`, with
 * the visitor's visits in the window). Only those `wanted` (a webhook of the owner subscribed to
 * them) are built.
 */
function eventsOf(visit: RawVisit, at: number, enrichment: Enrichment, burst: BurstEvent | undefined, wanted: (type: EventType) => boolean): EventDraft[] {
  const types = enrichment.kind === 'attack' || burst ? SUSPICIOUS : enrichment.kind === 'visit' ? (enrichment.is_unique ? NEW_UNIQUE : NEW) : NONE;
  const raised = types.filter(wanted);
  if (raised.length === 0) return [];
  const data = {
    visit_id: visit.visit_id,
    ts: visit.ts,
    kind: enrichment.kind,
    link_id: visit.link_id,
    slug: visit.slug,
    subdomain: visit.subdomain,
    ip_public: visit.ip_public,
    country: enrichment.country,
    region: enrichment.region,
    city: enrichment.city,
    browser: enrichment.browser,
    os: enrichment.os,
    device_type: enrichment.device_type,
    referrer: visit.referrer,
    is_unique: enrichment.is_unique === 1,
    ...(enrichment.is_attack ? { attack_type: enrichment.attack_type } : {}),
  };
  // A redelivered visit raises its events again with the same ids.
  const owner = { ownerId: visit.owner_id, subdomain: visit.subdomain, origin: { key: visit.visit_id, at } };
  if (enrichment.kind === 'attack') return [{ type: 'security.suspicious', ...owner, data: { ...data, reason: 'attack' } }];
  if (burst) return [{ type: 'security.suspicious', ...owner, data: { ...data, reason: 'burst', burst } }];
  return raised.map((type) => ({ type, ...owner, data }));
}

/**
 * Which of its events a batch's visits raise: those a webhook of the visit's owner is subscribed to
 * (of the visit's subdomain or of all), as the webhooks are when the batch is stored. The `events`
 * topic feeds only webhooks: raising visit.new for every visit of every owner cost 3 to 4 µs of CPU
 * a visit and 150 MB of peak memory at full load in the one-process platform, for events the dispatcher then
 * dropped. A webhook receives the events of visits stored after it is created (every change of a
 * webhook bumps the cache's version on every node).
 */
async function eventFilter(subscriptions: WebhookCache, visits: RawVisit[]): Promise<(visit: RawVisit) => ((type: EventType) => boolean) | undefined> {
  const owners = new Set<string>();
  for (const visit of visits) if (visit.owner_id) owners.add(visit.owner_id);
  const subscribed = owners.size > 0 ? await subscriptions.enabledOf([...owners]) : new Map<string, WebhookRow[]>();
  // undefined: the visit's owner has no enabled webhook, and the visit raises nothing.
  return (visit) => {
    const webhooks = subscribed.get(visit.owner_id);
    if (!webhooks || webhooks.length === 0) return undefined;
    return (type) => webhooks.some((webhook) => matches(webhook, { type, subdomain: visit.subdomain }));
  };
}

/** The repositories the enricher role reads and writes. */
export type EnricherRepositories = Pick<Repositories, 'visits' | 'beacons' | 'links' | 'subdomains' | 'webhooks' | 'visitorSalts'>;

/**
 * The enricher role: consumes `visits.raw` in batches, enriches the valid visits (geolocation,
 * user agent, bot and attack classification: enrich.ts), inserts them into ClickHouse and
 * sends the rest to `visits.dlq` with their reason. The batch resolves (and its offsets are
 * committed) only after both writes succeeded; a failure redelivers the whole batch, unless a
 * message caused it: that message is isolated and dead-lettered, the rest stored (poison.ts).
 * A composition root: the platform hands it the process's repositories; run alone (tests, benches)
 * it builds them from the context's clients.
 */
export async function startVisitConsumer(
  context: Pick<Context, 'db' | 'analytics' | 'messageLog' | 'cache' | 'config' | 'log' | 'metrics'>,
  repositories: EnricherRepositories = createRepositories(context),
  /** The process's cache of webhooks (shared with its worker role); one of its own when not given. */
  subscriptions: WebhookCache = webhookCache({ webhooks: repositories.webhooks, cache: context.cache }),
): Promise<Consumer> {
  const { messageLog, metrics } = context;
  const geo = await openGeoLookup();
  const salts = saltBook(repositories);
  const uniques = uniqueVisitors(repositories);
  const events = createEventBus(context);
  const limits = await limitWatcher({ ...context, repositories });
  const beacons = beaconStore(repositories);
  const bursts = burstDetector(context.config.burst);
  const owners = subdomainOwners(repositories);

  /** Enriches visits (and remembers their uniques, see deriveAll). */
  const prepare = (visits: RawVisit[], redelivered: boolean) => deriveAll(visits, redelivered, geo, salts, uniques, bursts);
  /**
   * Inserts an enriched batch and counts it. A redelivered batch first leaves out the visits already
   * stored (one query; a batch handed over for the first time asks nothing): whatever its
   * composition, a visit is inserted once, and counted once by the rollup views.
   */
  const store = async (batch: Derived) => {
    let { visits, enrichments } = batch;
    if (visits.length === 0) return;
    if (batch.redelivered) {
      const fresh = await leaveOutStored(repositories, batch);
      if (fresh.skipped > 0) {
        metrics.visitsDeduplicated.inc(fresh.skipped);
        // The inserts that stored them may have been cut before every rollup view counted them: inserted again as they were, views that have them drop them.
        const blocks = await reinsertStoredBlocks(repositories, fresh.stored, batch.visits);
        context.log.info(
          { visits: visits.length, already_stored: fresh.skipped, blocks_inserted_again: blocks },
          'redelivered batch: visits already stored left out of the insert, their blocks inserted again for the views',
        );
      }
      ({ visits, enrichments } = fresh);
      if (visits.length === 0) return;
    }
    const insertStarted = performance.now();
    await insertVisits(repositories, visits, (_visit, index) => enrichments[index]!);
    metrics.insertDuration.observe((performance.now() - insertStarted) / 1000);
    metrics.insertBatchSize.observe(visits.length);
    metrics.visitsInserted.inc(visits.length);
    const kinds = new Map<string, number>();
    for (const { kind } of enrichments) kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
    kinds.forEach((count, kind) => metrics.visitsEnriched.inc({ kind }, count));
  };

  /** The handler of visits.raw: prepare, store and finish (stages.ts), the next batch prepared while one is stored. */
  const staged = orderedStages<Delivery, PreparedBatch>({
    async prepare({ messages, redelivered }) {
      const visits: RawVisit[] = [];
      const dead: DeadLetter[] = [];
      for (const [index, message] of messages.entries()) {
        if (index % SLICE === SLICE - 1) await nextTurn();
        const outcome = decodeVisit(message);
        if (outcome.kind === 'ok') visits.push(outcome.visit);
        else dead.push(outcome);
      }
      // Attack probes reach the edge on a subdomain but no link: their owner is found here, off the redirect path.
      return { ...(await prepare(await owners.withOwners(visits), redelivered)), dead };
    },
    store,
    async finish({ visits, enrichments, times, burstsStarted, people, dead }) {
      // Beacons that arrived before their visit (links with append_visit_id) are merged now that it is stored.
      const expecting = visits.filter((visit) => visit.expects_beacon).map((visit) => visit.visit_id);
      if (expecting.length > 0) metrics.beacons.inc({ outcome: 'merged' }, await beacons.mergeIntoVisits(await beacons.statesOf(expecting)));
      await deadLetter(context, TOPICS.visitsRaw, dead);
      // After the rows are stored; a failure here redelivers the batch, whose stored visits are then left out.
      const limitEvents = await limits.check(people);
      const wantedOf = await eventFilter(subscriptions, visits);
      const drafts: EventDraft[] = [];
      for (let index = 0; index < visits.length; index++) {
        if (index % SLICE === SLICE - 1) await nextTurn();
        const visit = visits[index]!;
        const wanted = wantedOf(visit);
        if (!wanted) continue;
        for (const draft of eventsOf(visit, times[index]!, enrichments[index]!, burstsStarted.get(index), wanted)) drafts.push(draft);
      }
      await events.emitMany([...drafts, ...limitEvents]);
      limits.announced(limitEvents);
    },
    /**
     * A batch that failed because of a message is handled again in parts (poison.ts), in its place
     * in line; the messages that fail alone go to the dead-letter topic. A systemic failure rejects:
     * the batch is redelivered.
     */
    async recover({ messages, heartbeat }, failure, alone) {
      const poisons = await isolatePoison(messages, failure, async (part) => {
        await heartbeat();
        await alone({ messages: part, redelivered: true, heartbeat });
      });
      await deadLetterPoisons(context, TOPICS.visitsRaw, poisons);
      // A poison visit was remembered as judged (uniques) and is never stored.
      if (poisons.length > 0) uniques.forget();
    },
    // The uniques remembered for a batch that is not stored are forgotten (all of them: they are read again).
    failed: () => uniques.forget(),
  });

  const consumer = await messageLog.consume({
    groupId: ENRICHER_GROUP,
    topic: TOPICS.visitsRaw,
    maxBatch: context.config.enricherBatch.size,
    maxWaitMs: context.config.enricherBatch.waitMs,
    minIntervalMs: context.config.enricherBatch.intervalMs,
    concurrency: ENRICHER_CONCURRENCY,
    // A batch holding a message an ingest node's forwarder sent again is checked like a redelivered one.
    handler: (messages, control) => staged({ messages, redelivered: batchRedelivered(messages, control), heartbeat: control.heartbeat }),
  });
  // Beacon-started visits are never people's visits of a link: they remember no uniques, and a
  // failure has nothing to forget (forgetting would drop the visits batches' remembered uniques).
  const beaconConsumer = await startBeaconConsumer(context, beacons, async (visits, redelivered) => store(await prepare(visits, redelivered)), owners);
  return {
    async stop() {
      await Promise.all([consumer.stop(), beaconConsumer.stop()]);
      await limits.close();
    },
  };
}
