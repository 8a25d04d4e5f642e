import { describe, expect, it } from 'vitest';
import { dlqReplaysOf, dlqSourceOf, erasedDeadLetter, ipForms, ownHeaders, replayHeaders } from './dead-letters.js';

describe('dead-letter headers', () => {
  it("tells the source topic: x-dlq-source, else the beacons' x-dlq-topic, else visits.raw; null for a topic dead letters do not come from", () => {
    expect(dlqSourceOf({ 'x-dlq-source': 'tracker.raw' })).toBe('tracker.raw');
    expect(dlqSourceOf({ 'x-dlq-topic': 'tracker.raw' })).toBe('tracker.raw');
    expect(dlqSourceOf({ 'x-dlq-reason': 'undecodable JSON' })).toBe('visits.raw');
    expect(dlqSourceOf(undefined)).toBe('visits.raw');
    expect(dlqSourceOf({ 'x-dlq-source': 'events' })).toBeNull();
    expect(dlqSourceOf({ 'x-dlq-source': 'visits.dlq' })).toBeNull();
  });

  it('republishes a dead letter with its own headers and one replay more, without the dead-letter ones', () => {
    const headers = { 'x-origin': 'edge-1', 'x-dlq-reason': 'r', 'x-dlq-source': 'visits.raw', 'x-dlq-at': '2025-01-01T00:00:00.000Z', 'x-dlq-replays': '2' };
    expect(ownHeaders(headers)).toEqual({ 'x-origin': 'edge-1' });
    expect(replayHeaders(headers)).toEqual({ 'x-origin': 'edge-1', 'x-dlq-replays': '3' });
    expect(replayHeaders(undefined)).toEqual({ 'x-dlq-replays': '1' });
    expect(dlqReplaysOf({ 'x-dlq-replays': 'many' })).toBe(0);
    expect(dlqReplaysOf({ 'x-dlq-replays': '-4' })).toBe(0);
  });
});

describe('the dead letters an erasure removes', () => {
  const visit = (fields: Record<string, unknown>) => ({ key: 'l_1', value: JSON.stringify({ owner_id: 'u_a', subdomain: 'shop', link_id: 'l_1', ...fields }) });

  it('by IP: any textual form, in the value, key or headers, JSON or not, never a longer address that holds it', () => {
    const erased = erasedDeadLetter({ ip: '198.51.100.7' }, undefined);
    expect(erased(visit({ ip_public: '198.51.100.7' }))).toBe(true);
    expect(erased({ key: 'x', value: 'garbage {"ip_public":"198.51.100.7", truncat' })).toBe(true);
    expect(erased({ key: 'x', value: '', headers: { 'x-forwarded-for': '10.0.0.1, 198.51.100.7:443' } })).toBe(true);
    expect(erased({ key: 'x', value: '::ffff:198.51.100.7' })).toBe(true);
    expect(erased(visit({ ip_public: '198.51.100.70' }))).toBe(false);
    expect(erased(visit({ ip_public: '2198.51.100.7' }))).toBe(false);
    expect(erased(visit({ ip_public: '198.51.100.7.5' }))).toBe(false);
    const v6 = erasedDeadLetter({ ip: '2001:DB8:0:0:0:0:0:1' }, undefined);
    expect(ipForms('2001:DB8:0:0:0:0:0:1')).toEqual(expect.arrayContaining(['2001:DB8:0:0:0:0:0:1', '2001:db8::1']));
    expect(v6(visit({ ip_public: '2001:db8::1' }))).toBe(true);
    expect(v6(visit({ ip_public: '2001:DB8:0:0:0:0:0:1' }))).toBe(true);
    expect(v6(visit({ ip_public: '2001:0db8:0000:0000:0000:0000:0000:0001' }))).toBe(true);
    expect(v6(visit({ ip_public: '2001:db8::12' }))).toBe(false);
    expect(v6(visit({ ip_public: '2001:db8::1:5' }))).toBe(false);
  });

  it("by visit id, link or subdomain; an owner's erasure leaves dead letters naming another owner, not those naming none", () => {
    const id = '0190d7a6-1c2b-7c3d-8e4f-5a6b7c8d9e0f';
    expect(erasedDeadLetter({ visit_id: id }, undefined)({ key: id.toUpperCase(), value: '{' })).toBe(true);
    expect(erasedDeadLetter({ visit_id: id }, undefined)(visit({ visit_id: 'other' }))).toBe(false);
    expect(erasedDeadLetter({ link_id: 'l_1' }, undefined)({ key: 'l_1', value: 'not json' })).toBe(true);
    expect(erasedDeadLetter({ link_id: 'l_2' }, undefined)(visit({}))).toBe(false);
    expect(erasedDeadLetter({ subdomain: 'shop' }, undefined)({ key: 'k', value: '{"subdomain": "shop", "ts": 12' })).toBe(true);
    expect(erasedDeadLetter({ subdomain: 'sho' }, undefined)(visit({}))).toBe(false);
    const alices = erasedDeadLetter({ ip: '198.51.100.7' }, 'u_a');
    expect(alices(visit({ ip_public: '198.51.100.7' }))).toBe(true);
    expect(alices(visit({ ip_public: '198.51.100.7', owner_id: 'u_b' }))).toBe(false);
    expect(alices({ key: 'x', value: 'ip=198.51.100.7' })).toBe(true);
  });
});
