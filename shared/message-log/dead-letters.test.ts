import { describe, expect, it } from 'vitest';
import { dlqReplaysOf, dlqSourceOf, ownHeaders, replayHeaders } from './dead-letters.js';

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
