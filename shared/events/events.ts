import { v7 as uuidv7 } from 'uuid';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { TOPICS } from '../visit-log/topics.js';
import type { LogMessage, VisitLog } from '../visit-log/visit-log.js';

/** Subscribable webhook events of the spec. */
export const EVENT_TYPES = [
  'visit.new',
  'visit.unique',
  'link.limit_reached',
  'security.suspicious',
  'link.created',
  'link.target_down',
  'agent.task',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** One platform event as it travels on the event bus (the `events` topic of the visit log). */
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
  type: EventType;
  ownerId: string;
  subdomain: string | null;
  data: unknown;
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
  emit<T>(type: EventType, owner: { ownerId: string; subdomain: string | null }, data: T): Promise<PlatformEvent<T> | undefined>;
  /** Publishes many events in one call (a batch of visits); throws when the log refuses them, so the batch is redelivered. */
  emitMany(events: EventDraft[]): Promise<void>;
}

/** Decodes a message of the `events` topic; undefined when it is not a platform event. */
export function decodeEvent(message: LogMessage): PlatformEvent | undefined {
  try {
    const event = JSON.parse(message.value) as PlatformEvent;
    return typeof event.id === 'string' && (EVENT_TYPES as readonly string[]).includes(event.type) ? event : undefined;
  } catch {
    return undefined;
  }
}

const newEvent = <T>({ type, ownerId, subdomain, data }: EventDraft & { data: T }, occurredAt: string): PlatformEvent<T> => ({
  id: uuidv7(),
  type,
  occurred_at: occurredAt,
  owner_id: ownerId,
  subdomain,
  data,
});
const toMessage = (event: PlatformEvent): LogMessage => ({ key: event.owner_id, value: JSON.stringify(event), headers: { 'x-event-type': event.type } });

export function createEventBus(deps: { visitLog: VisitLog; log: Logger; metrics: Metrics }): EventBus {
  return {
    async emitMany(events) {
      if (events.length === 0) return;
      const occurredAt = new Date().toISOString();
      await deps.visitLog.publish(TOPICS.events, events.map((draft) => toMessage(newEvent(draft, occurredAt))));
    },
    async emit(type, { ownerId, subdomain }, data) {
      const event = newEvent({ type, ownerId, subdomain, data }, new Date().toISOString());
      try {
        await deps.visitLog.publish(TOPICS.events, [toMessage(event)]);
        return event;
      } catch (error) {
        deps.metrics.eventPublishFailures.inc({ event: type });
        deps.log.error({ err: error, event: type, event_id: event.id }, 'event could not be published');
        return undefined;
      }
    },
  };
}
