import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../metrics.js';
import { createDurableLog } from '../message-log/lmdb.js';
import { TOPICS } from '../message-log/topics.js';
import type { LogMessage } from '../message-log/message-log.js';
import { uuidv7At } from '../ids.js';
import { createEventBus, decodeEvents, eventId, EVENT_TYPES, type EventDraft } from './events.js';

/** The messages of the `events` topic of a one-process log, read back by a consumer of its own. */
async function published(emit: (bus: ReturnType<typeof createEventBus>) => Promise<unknown>): Promise<LogMessage[]> {
  const metrics = createMetrics();
  const log = pino({ level: 'silent' });
  const dir = mkdtempSync(join(tmpdir(), 'linktrack-events-test-'));
  const messageLog = createDurableLog({ dir, commitDelayMs: 1 }, log, metrics);
  const bus = createEventBus({ messageLog, metrics, log });
  await emit(bus);
  const messages: LogMessage[] = [];
  const consumer = await messageLog.consume({
    groupId: 'events-test',
    topic: TOPICS.events,
    maxBatch: 10_000,
    handler: async (batch) => void messages.push(...batch),
  });
  await new Promise((resolve) => setTimeout(resolve, 50));
  await consumer.stop();
  await messageLog.close();
  rmSync(dir, { recursive: true, force: true });
  return messages;
}

const draft = (ownerId: string, n: number): EventDraft => ({ type: 'visit.new', ownerId, subdomain: `${ownerId}-sub`, data: { n } });

describe('event bus messages', () => {
  it('groups a batch of events by owner, in order, at most 500 per message, keyed by the owner', async () => {
    const drafts = Array.from({ length: 1_200 }, (_, n) => draft(n % 3 === 0 ? 'owner-a' : 'owner-b', n));
    const messages = await published((bus) => bus.emitMany(drafts));
    // owner-a has 400 events (one message), owner-b 800 (500 + 300).
    expect(messages.map((message) => [message.key, message.headers?.['x-event-count']])).toEqual([
      ['owner-a', '400'],
      ['owner-b', '500'],
      ['owner-b', '300'],
    ]);
    expect(messages[0]!.headers?.['x-event-types']).toBe('visit.new');
    const decoded = messages.flatMap(decodeEvents);
    expect(decoded).toHaveLength(1_200);
    for (const owner of ['owner-a', 'owner-b']) {
      const ns = decoded.filter((event) => event.owner_id === owner).map((event) => (event.data as { n: number }).n);
      expect(ns).toEqual(drafts.map((entry, n) => (entry.ownerId === owner ? n : -1)).filter((n) => n >= 0));
    }
    expect(new Set(decoded.map((event) => event.id)).size).toBe(1_200);
    expect(decoded[0]).toMatchObject({ type: 'visit.new', owner_id: 'owner-a', subdomain: 'owner-a-sub', occurred_at: expect.any(String) });
  });

  it('writes events that share their data as JSON.stringify would', async () => {
    const data = { visit_id: 'v1', nested: { list: [1, 'two', null], text: 'quote " and \\ backslash' } };
    const messages = await published((bus) =>
      bus.emitMany([
        { type: 'visit.new', ownerId: 'owner-d', subdomain: 'd', data },
        { type: 'visit.unique', ownerId: 'owner-d', subdomain: 'd', data },
        { type: 'link.limit_reached', ownerId: 'owner-d', subdomain: null, data: { other: true } },
      ]),
    );
    const events = decodeEvents(messages[0]!);
    expect(messages[0]!.value).toBe(JSON.stringify(events));
    expect(events.map((event) => [event.type, event.data])).toEqual([
      ['visit.new', data],
      ['visit.unique', data],
      ['link.limit_reached', { other: true }],
    ]);
    expect(messages[0]!.headers?.['x-event-types']).toBe('visit.new,visit.unique,link.limit_reached');
  });

  it('gives an event with an origin a stable UUIDv7 id: the same for the same type, key and time', async () => {
    const at = Date.parse('2026-11-21T10:00:00.123Z');
    const origin = { key: '0196a3b0-0000-7000-8000-000000000001', at };
    const drafts: EventDraft[] = [
      { type: 'visit.new', ownerId: 'o', subdomain: 's', data: { n: 1 }, origin },
      { type: 'visit.new', ownerId: 'o', subdomain: 's', data: { n: 2 }, origin },
      { type: 'visit.unique', ownerId: 'o', subdomain: 's', data: { n: 3 }, origin },
      { type: 'visit.new', ownerId: 'o', subdomain: 's', data: { n: 4 }, origin: { ...origin, key: 'another visit' } },
      { type: 'visit.new', ownerId: 'o', subdomain: 's', data: { n: 5 } },
      { type: 'visit.new', ownerId: 'o', subdomain: 's', data: { n: 6 } },
    ];
    const [first, again, unique, other, fresh, fresher] = (await published((bus) => bus.emitMany(drafts))).flatMap(decodeEvents).map((event) => event.id);
    expect(again).toBe(first);
    expect(new Set([first, unique, other, fresh, fresher]).size).toBe(5);
    for (const id of [first, unique, other]) {
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      // The UUIDv7's time is the origin's.
      expect(parseInt(id!.replace(/-/g, '').slice(0, 12), 16)).toBe(at);
    }
  });

  it('derives the ids of events about a UUID from its random bits: distinct per type and per key, none alike', () => {
    const at = Date.parse('2026-11-21T10:00:00.123Z');
    const keys = Array.from({ length: 2_000 }, () => uuidv7At(at));
    const ids = keys.flatMap((key) => EVENT_TYPES.map((type) => eventId(type, { key, at })));
    expect(new Set(ids).size).toBe(keys.length * EVENT_TYPES.length);
    for (const id of ids.slice(0, 50)) expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(at);
    // Stable, and a key that is not a lower-case UUID goes through SHA-256 (stable too).
    expect(eventId('visit.new', { key: keys[0]!, at })).toBe(ids[0]);
    expect(eventId('visit.new', { key: keys[0]!.toUpperCase(), at })).toBe(eventId('visit.new', { key: keys[0]!.toUpperCase(), at }));
    expect(eventId('visit.new', { key: keys[0]!.toUpperCase(), at })).not.toBe(ids[0]);
    // The SHA-256 ids (link.limit_reached: a link id) are pinned: receivers deduplicate across versions.
    expect(eventId('link.limit_reached', { key: 'l_abc123', at })).toBe('01a1fd8c-697b-7b52-bc8e-c7533a6dc920');
  });

  it('escapes owner and subdomain as JSON.stringify does', async () => {
    const messages = await published((bus) => bus.emitMany([{ type: 'visit.new', ownerId: 'owner-"q"\\', subdomain: 'sub\n"x"', data: { n: 1 } }]));
    const events = decodeEvents(messages[0]!);
    expect(messages[0]!.value).toBe(JSON.stringify(events));
    expect(events[0]).toMatchObject({ owner_id: 'owner-"q"\\', subdomain: 'sub\n"x"' });
  });

  it('publishes a single event as a message of one', async () => {
    let emitted: unknown;
    const messages = await published(async (bus) => (emitted = await bus.emit('link.created', { ownerId: 'owner-c', subdomain: null }, { id: 'l_1' })));
    expect(messages).toHaveLength(1);
    expect(messages[0]!.headers).toMatchObject({ 'x-event-count': '1', 'x-event-types': 'link.created' });
    expect(decodeEvents(messages[0]!)).toEqual([emitted]);
  });

  it('decodes nothing from a message that is not events, and skips entries that are not platform events', () => {
    expect(decodeEvents({ key: 'k', value: 'not json' })).toEqual([]);
    expect(decodeEvents({ key: 'k', value: '42' })).toEqual([]);
    const good = { id: 'e1', type: 'visit.new', occurred_at: 'now', owner_id: 'o', subdomain: 's', data: {} };
    expect(decodeEvents({ key: 'k', value: JSON.stringify([good, { id: 'e2', type: 'made.up' }, null, 'text']) })).toEqual([good]);
  });
});
