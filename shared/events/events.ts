import { hash } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { uuidv7Derived } from '../ids.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { RESERVED_EVENT_TYPES } from '../reserved.js';
import { nextTurn } from '../turns.js';
import { TOPICS } from '../message-log/topics.js';
import type { LogMessage, MessageLog } from '../message-log/message-log.js';

/** Events the platform emits (the spec's event table, "Emitted: yes"). */
export const LIVE_EVENT_TYPES = ['visit.new', 'visit.unique', 'link.limit_reached', 'security.suspicious', 'link.created'] as const;
export type LiveEventType = (typeof LIVE_EVENT_TYPES)[number];

/** Subscribable webhook events of the spec: the live ones and those reserved (accepted, not emitted yet). */
export const EVENT_TYPES = [...LIVE_EVENT_TYPES, ...RESERVED_EVENT_TYPES] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** One platform event as it travels on the event bus (the `events` topic of the message log). */
export interface PlatformEvent<T = unknown> {
  /** UUIDv7: receivers deduplicate on it. */
  id: string;
  type: EventType;
  occurred_at: string;
  owner_id: string;
  subdomain: string | null;
  data: T;
}

/** An event to publish: its type, its owner and what it reports. */
export interface EventDraft {
  type: LiveEventType;
  ownerId: string;
  subdomain: string | null;
  data: unknown;
  /**
   * What the event reports, when it can be raised again for the same thing (a visit batch
   * redelivered after a failure): the event then gets a stable id, the same for the same type,
   * key and time, so receivers that deduplicate on `id` see it once. Without it the id is new.
   */
  origin?: { key: string; at: number };
}

/** Per type, what the random bits of its events' ids about a UUID are masked with (SHA-256 of the type). */
const ID_MASKS = new Map(EVENT_TYPES.map((type) => [type, hash('sha256', type, 'buffer')]));

/**
 * The id of an event: a UUIDv7 of now, or, for an event with an origin, a stable UUIDv7 whose time
 * is the origin's. When the origin's key is a UUID (a visit's id: every visit raises one or two
 * events) the other bits are the key's random bits masked per type, no hash per event (0.2 µs
 * against 2.2); otherwise they come from SHA-256 of the type and the key.
 */
export function eventId(type: EventType, origin: EventDraft['origin']): string {
  if (!origin) return uuidv7();
  return (
    uuidv7Derived(origin.at, origin.key, ID_MASKS.get(type)!) ??
    uuidv7({ msecs: origin.at, random: hash('sha256', `${type}\n${origin.key}`, 'buffer').subarray(0, 16) })
  );
}

/**
 * The event bus the webhook worker consumes: the `events` topic (Kafka in production, the
 * in-process log embedded), keyed by owner so one owner's events keep their order.
 */
export interface EventBus {
  /**
   * Publishes one event after the change it reports is stored. A failure is counted and logged
   * and not thrown: the stored change stands and the caller's answer is still true.
   */
  emit<T>(type: LiveEventType, owner: { ownerId: string; subdomain: string | null }, data: T): Promise<PlatformEvent<T> | undefined>;
  /** Publishes many events in one call (a batch of visits); throws when the log refuses them, so the batch is redelivered. */
  emitMany(events: EventDraft[]): Promise<void>;
}

/**
 * Decodes a message of the `events` topic: the events it carries, in order (one owner's events of
 * one batch travel in one message), keeping only well-formed platform events.
 */
export function decodeEvents(message: LogMessage): PlatformEvent[] {
  let value: unknown;
  try {
    value = JSON.parse(message.value);
  } catch {
    return [];
  }
  return (Array.isArray(value) ? value : [value]).filter(
    (event: Partial<PlatformEvent> | null): event is PlatformEvent =>
      typeof event === 'object' && event !== null && typeof event.id === 'string' && (EVENT_TYPES as readonly string[]).includes(event.type as string),
  );
}

const newEvent = <T>({ type, ownerId, subdomain, data, origin }: EventDraft & { data: T }, occurredAt: string): PlatformEvent<T> => ({
  id: eventId(type, origin),
  type,
  occurred_at: occurredAt,
  owner_id: ownerId,
  subdomain,
  data,
});

/**
 * One message of the `events` topic: a JSON array of one owner's events, keyed by the owner (so
 * they keep their order), with their count and distinct types as headers. A batch of 10 000
 * visits of one owner is one message rather than 10 000: on Kafka the per-message cost of
 * producing and compressing was as large as the whole rest of the enricher's work.
 */
const toMessage = (ownerId: string, events: PlatformEvent[]): LogMessage => ({
  key: ownerId,
  value: eventsJson(events),
  headers: { 'x-event-count': String(events.length), 'x-event-types': [...new Set(events.map((event) => event.type))].join(',') },
});

/**
 * The JSON text of some events, as JSON.stringify would write the array, with each `data` object
 * serialised once however many events carry it (a visit's visit.new and visit.unique share theirs).
 * The id and type need no escaping (a UUID, a name of EVENT_TYPES).
 */
function eventsJson(events: PlatformEvent[]): string {
  const dataJson = new Map<unknown, string>();
  const parts = events.map(({ id, type, occurred_at, owner_id, subdomain, data }) => {
    let json = dataJson.get(data);
    if (json === undefined) dataJson.set(data, (json = JSON.stringify(data) ?? 'null'));
    return `{"id":"${id}","type":"${type}","occurred_at":${JSON.stringify(occurred_at)},"owner_id":${JSON.stringify(owner_id)},"subdomain":${JSON.stringify(subdomain)},"data":${json}}`;
  });
  return `[${parts.join(',')}]`;
}

/** Most events in one message (about 1 KiB each: well below the broker's message size limit). */
const EVENTS_PER_MESSAGE = 500;

/**
 * The messages of some events: grouped by owner in their order, at most EVENTS_PER_MESSAGE each.
 * The event loop runs between two messages: a batch of 10 000 visits' events written in one go
 * held it for 20 to 30 ms, and redirects waited behind it.
 */
async function toMessages(drafts: EventDraft[], occurredAt: string): Promise<LogMessage[]> {
  const byOwner = new Map<string, EventDraft[]>();
  for (const draft of drafts) {
    const owned = byOwner.get(draft.ownerId);
    if (owned) owned.push(draft);
    else byOwner.set(draft.ownerId, [draft]);
  }
  const messages: LogMessage[] = [];
  for (const [ownerId, owned] of byOwner) {
    for (let start = 0; start < owned.length; start += EVENTS_PER_MESSAGE) {
      if (messages.length > 0) await nextTurn();
      messages.push(
        toMessage(
          ownerId,
          owned.slice(start, start + EVENTS_PER_MESSAGE).map((draft) => newEvent(draft, occurredAt)),
        ),
      );
    }
  }
  return messages;
}

export function createEventBus(deps: { messageLog: MessageLog; log: Logger; metrics: Metrics }): EventBus {
  return {
    async emitMany(events) {
      if (events.length === 0) return;
      const occurredAt = new Date().toISOString();
      await deps.messageLog.publish(TOPICS.events, await toMessages(events, occurredAt));
    },
    async emit(type, { ownerId, subdomain }, data) {
      const event = newEvent({ type, ownerId, subdomain, data }, new Date().toISOString());
      try {
        await deps.messageLog.publish(TOPICS.events, [toMessage(ownerId, [event])]);
        return event;
      } catch (error) {
        deps.metrics.eventPublishFailures.inc({ event: type });
        deps.log.error({ err: error, event: type, event_id: event.id }, 'event could not be published');
        return undefined;
      }
    },
  };
}
