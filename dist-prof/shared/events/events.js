import { createHash } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { TOPICS } from '../visit-log/topics.js';
/** Subscribable webhook events of the spec. */
export const EVENT_TYPES = [
    'visit.new',
    'visit.unique',
    'link.limit_reached',
    'security.suspicious',
    'link.created',
    'link.target_down',
    'agent.task',
];
/**
 * The id of an event: a UUIDv7 of now, or, for an event with an origin, the UUIDv7 whose time is
 * the origin's and whose other bits come from SHA-256 of the type and the key (stable).
 */
function eventId(type, origin) {
    if (!origin)
        return uuidv7();
    return uuidv7({ msecs: origin.at, random: createHash('sha256').update(`${type}\n${origin.key}`).digest().subarray(0, 16) });
}
/**
 * Decodes a message of the `events` topic: the events it carries, in order (one owner's events of
 * one batch travel in one message), keeping only well-formed platform events.
 */
export function decodeEvents(message) {
    let value;
    try {
        value = JSON.parse(message.value);
    }
    catch {
        return [];
    }
    return (Array.isArray(value) ? value : [value]).filter((event) => typeof event === 'object' && event !== null && typeof event.id === 'string' && EVENT_TYPES.includes(event.type));
}
const newEvent = ({ type, ownerId, subdomain, data, origin }, occurredAt) => ({
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
const toMessage = (ownerId, events) => ({
    key: ownerId,
    value: eventsJson(events),
    headers: { 'x-event-count': String(events.length), 'x-event-types': [...new Set(events.map((event) => event.type))].join(',') },
});
/**
 * The JSON text of some events, as JSON.stringify would write the array, with each `data` object
 * serialised once however many events carry it (a visit's visit.new and visit.unique share theirs).
 */
function eventsJson(events) {
    const dataJson = new Map();
    const parts = events.map(({ data, ...head }) => {
        let json = dataJson.get(data);
        if (json === undefined)
            dataJson.set(data, (json = JSON.stringify(data) ?? 'null'));
        return `${JSON.stringify(head).slice(0, -1)},"data":${json}}`;
    });
    return `[${parts.join(',')}]`;
}
/** Most events in one message (about 1 KiB each: well below the broker's message size limit). */
const EVENTS_PER_MESSAGE = 500;
/** The messages of some events: grouped by owner in their order, at most EVENTS_PER_MESSAGE each. */
function toMessages(events) {
    const byOwner = new Map();
    for (const event of events) {
        const owned = byOwner.get(event.owner_id);
        if (owned)
            owned.push(event);
        else
            byOwner.set(event.owner_id, [event]);
    }
    const messages = [];
    for (const [ownerId, owned] of byOwner) {
        for (let start = 0; start < owned.length; start += EVENTS_PER_MESSAGE)
            messages.push(toMessage(ownerId, owned.slice(start, start + EVENTS_PER_MESSAGE)));
    }
    return messages;
}
export function createEventBus(deps) {
    return {
        async emitMany(events) {
            if (events.length === 0)
                return;
            const occurredAt = new Date().toISOString();
            await deps.visitLog.publish(TOPICS.events, toMessages(events.map((draft) => newEvent(draft, occurredAt))));
        },
        async emit(type, { ownerId, subdomain }, data) {
            const event = newEvent({ type, ownerId, subdomain, data }, new Date().toISOString());
            try {
                await deps.visitLog.publish(TOPICS.events, [toMessage(ownerId, [event])]);
                return event;
            }
            catch (error) {
                deps.metrics.eventPublishFailures.inc({ event: type });
                deps.log.error({ err: error, event: type, event_id: event.id }, 'event could not be published');
                return undefined;
            }
        },
    };
}
//# sourceMappingURL=events.js.map