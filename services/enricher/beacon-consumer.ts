import { toClickHouseTime } from '#shared/analytics/analytics.js';
import type { Context } from '#shared/context.js';
import { BeaconMessageSchema, beaconStateOf, uuidv7Time, type BeaconMessage, type BeaconState } from '#shared/tracker/beacon.js';
import { ENRICHER_GROUPS, TOPICS } from '#shared/message-log/topics.js';
import { DLQ_HEADERS } from '#shared/message-log/dead-letters.js';
import { batchRedelivered, type Consumer, type LogMessage } from '#shared/message-log/message-log.js';
import type { RawVisit } from '#shared/visits/raw-visit.js';
import type { Repositories } from '../repositories.js';
import type { SubdomainOwners } from './owners.js';
import { deadLetter, deadLetterPoisons, decodeMessage, type DeadLetter, type Decoded } from './decode.js';
import { isolatePoison } from './poison.js';
import { failedIn } from './stages.js';
import { batchToken } from '#shared/visits/visit-rows.js';

const BEACON_GROUP = ENRICHER_GROUPS[TOPICS.trackerRaw];

/** Decodes and validates one message of `tracker.raw`. Pure: no I/O. */
function decodeBeacon(message: LogMessage): Decoded<BeaconMessage> {
  return decodeMessage(BeaconMessageSchema, 'beacon', message);
}

/** The state of each visit's latest message in a batch (a later one replaces the whole beacon state). */
function latestStates(beacons: BeaconMessage[]): BeaconState[] {
  const latest = new Map<string, { beacon: BeaconMessage; at: number }>();
  for (const beacon of beacons) {
    const at = Date.parse(beacon.ts);
    const held = latest.get(beacon.visit_id);
    if (!held || at >= held.at) latest.set(beacon.visit_id, { beacon, at });
  }
  return [...latest.values()].map(({ beacon }) => beaconStateOf(beacon));
}

/** A visit row with a beacon state merged in: the beacon columns replaced, everything the edge decided kept. */
function mergeBeacon(row: Record<string, unknown>, state: BeaconState): Record<string, unknown> & { visit_id: unknown; version: number } {
  const { inserted_at: _inserted, ...kept } = row;
  return {
    ...kept,
    visit_id: state.visit_id,
    consent_analytics: state.consent_analytics,
    consent_lan_ip: state.consent_lan_ip,
    ip_lan: state.ip_lan,
    timezone: state.timezone,
    screen: state.screen,
    network: state.network,
    capabilities: state.capabilities,
    beacon_at: state.collected ? state.received_at : null,
    version: state.version,
  };
}

/** Rows of one visit and version have the same content whichever side wrote them: they are the key of an insert. */
const tokenOf = (rows: { visit_id: unknown; version: number }[]) => batchToken(rows.map((row) => `${String(row.visit_id)}:${row.version}`));

/** Time bounds of the visits named by UUIDv7 ids (a day of slack each side), for partition pruning. */
function timeBounds(ids: string[]): { from: string; to: string } {
  const times = ids.map((id) => uuidv7Time(id) ?? Date.now());
  const day = 86_400_000;
  return { from: toClickHouseTime(Math.min(...times) - day), to: toClickHouseTime(Math.max(...times) + day) };
}

/**
 * The two halves of the beacon merge, whichever of a visit and its beacon arrives first: the beacon
 * side stores its state and then merges into visits already stored; the visit side stores the visit
 * and then merges the states already stored. Merged rows are a newer version of the visit (its
 * ReplacingMergeTree keeps the highest), with the same content whichever side wrote them.
 */
export function beaconStore({ beacons, visits }: Pick<Repositories, 'beacons' | 'visits'>) {
  return {
    async saveStates(states: BeaconState[]): Promise<void> {
      if (states.length === 0) return;
      await beacons.insertStates(states, tokenOf(states));
    },
    async statesOf(ids: string[]): Promise<BeaconState[]> {
      if (ids.length === 0) return [];
      return beacons.statesOf(ids);
    },
    /** Merges each state into its stored visit, where the visit is there and not already newer; the count merged. */
    async mergeIntoVisits(states: BeaconState[]): Promise<number> {
      if (states.length === 0) return 0;
      const ids = states.map((state) => state.visit_id);
      const { from, to } = timeBounds(ids);
      const rows = await visits.rowsOf(ids, from, to);
      const byId = new Map(states.map((state) => [state.visit_id, state]));
      const merged = rows.flatMap((row) => {
        const state = byId.get(String(row.visit_id));
        return state && state.version > (row.version as number) ? [mergeBeacon(row, state)] : [];
      });
      if (merged.length > 0) {
        await visits.insertRows(merged, tokenOf(merged));
      }
      return merged.length;
    },
  };
}

/**
 * The beacon consumer of the enricher role (`tracker.raw`): a consent that started a visit inserts
 * that visit (kind `beacon`, enriched like any other, its `ip_public` the address the ingest node
 * saw) — with analytics consent only: a refusal that would have started one leaves nothing; every
 * other message leaves the visit's beacon state — consent gating applied here again, so no
 * signal is stored without analytics consent and no LAN address without lan_ip consent — which is
 * merged into the visit row. Offsets are committed after the writes. A visit a redelivered batch
 * started is inserted only if it is not stored yet (the rollups count each version-0 row); the
 * states and merges are idempotent (a state's version is its time, a merge a newer version). A
 * batch that a message makes fail is handled in parts, and that message dead-lettered (poison.ts).
 */
export async function startBeaconConsumer(
  context: Pick<Context, 'messageLog' | 'metrics' | 'log' | 'config'>,
  store: ReturnType<typeof beaconStore>,
  /** Enriches and stores beacon-started visits; `redelivered` (BatchControl): those already stored are left out. */
  enrichVisits: (visits: RawVisit[], redelivered: boolean) => Promise<void>,
  { ownerOf }: SubdomainOwners,
): Promise<Consumer> {
  const { messageLog, metrics } = context;

  /** Handles a batch of beacon messages; a failure names its stage (StageFailure). */
  const handle = async (messages: LogMessage[], redelivered: boolean) => {
    const beacons: BeaconMessage[] = [];
    const dead: DeadLetter[] = [];
    const ownVisits: RawVisit[] = [];
    for (const message of messages) {
      const entry = decodeBeacon(message);
      if (entry.kind === 'dlq') {
        dead.push(entry);
        continue;
      }
      const beacon = entry.value;
      // A refused consent that would start a visit (older edges published them): no visit, no state, nothing personal stored.
      if (beacon.type === 'consent' && beacon.own_visit && !beacon.analytics) continue;
      if (beacon.type === 'consent' && beacon.own_visit) {
        const owner = await ownerOf(beacon.own_visit.subdomain).catch(failedIn('owner'));
        if (owner === null) {
          dead.push({ reason: `unknown subdomain: ${beacon.own_visit.subdomain}`, code: 'unknown_subdomain', message });
          continue;
        }
        ownVisits.push({
          ...beacon.own_visit,
          visit_id: beacon.visit_id,
          ts: beacon.ts,
          kind: 'beacon',
          owner_id: owner,
          link_id: '',
          slug: '',
          expects_beacon: false,
        });
      }
      beacons.push(beacon);
    }
    await enrichVisits(ownVisits, redelivered).catch(failedIn('own_visit'));
    const states = latestStates(beacons);
    await store.saveStates(states).catch(failedIn('state'));
    const merged = await store.mergeIntoVisits(states).catch(failedIn('merge'));
    metrics.beacons.inc({ outcome: 'own_visit' }, ownVisits.length);
    metrics.beacons.inc({ outcome: 'state' }, states.length);
    metrics.beacons.inc({ outcome: 'merged' }, merged);

    await deadLetter(context, TOPICS.trackerRaw, dead, { [DLQ_HEADERS.topic]: TOPICS.trackerRaw });
  };

  return messageLog.consume({
    groupId: BEACON_GROUP,
    topic: TOPICS.trackerRaw,
    maxBatch: context.config.enricherBatch.size,
    maxWaitMs: context.config.enricherBatch.waitMs,
    minIntervalMs: context.config.enricherBatch.intervalMs,
    handler: async (messages, control) => {
      const { heartbeat } = control;
      try {
        // A batch holding a message an ingest node's forwarder sent again is checked like a redelivered one.
        await handle(messages, batchRedelivered(messages, control));
      } catch (failure) {
        // Caused by a message: the batch again in parts, as redelivered batches, and the messages
        // that fail alone dead-lettered (poison.ts); systemic: rethrown, the batch is redelivered.
        const poisons = await isolatePoison(messages, failure, async (part) => {
          await heartbeat();
          await handle(part, true);
        });
        await deadLetterPoisons(context, TOPICS.trackerRaw, poisons, { [DLQ_HEADERS.topic]: TOPICS.trackerRaw });
      }
    },
  });
}
