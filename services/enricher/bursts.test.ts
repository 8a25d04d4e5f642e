import { describe, expect, it } from 'vitest';
import { burstDetector } from './bursts.js';

const T = Date.parse('2026-11-21T10:00:00Z');

describe('burst detector (behaviour signal)', () => {
  it('lets a visitor make the allowance within the window; the visits beyond are a burst, the first of them starts it', () => {
    const bursts = burstDetector({ maxVisits: 3, windowSec: 10 });
    const judged = Array.from({ length: 6 }, (_, i) => bursts.judge('link', 'hash', `v${i}`, T + i * 100));
    expect(judged.map((j) => j.burst)).toEqual([false, false, false, true, true, true]);
    expect(judged.map((j) => j.started)).toEqual([false, false, false, true, false, false]);
    expect(judged.map((j) => j.visits)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('counts per visitor and per link', () => {
    const bursts = burstDetector({ maxVisits: 2, windowSec: 10 });
    for (let i = 0; i < 2; i++) bursts.judge('link', 'hash', `a${i}`, T + i);
    expect(bursts.judge('link', 'other visitor', 'b0', T + 5).burst).toBe(false);
    expect(bursts.judge('other link', 'hash', 'c0', T + 5).burst).toBe(false);
    expect(bursts.judge('link', 'hash', 'a2', T + 5).burst).toBe(true);
  });

  it('counts only visits within the window: a steady visitor never bursts, and a pause ends a burst', () => {
    const bursts = burstDetector({ maxVisits: 3, windowSec: 10 });
    // One visit every 4 s: at most 3 within any 10 s.
    expect(Array.from({ length: 20 }, (_, i) => bursts.judge('link', 'steady', `s${i}`, T + i * 4_000).burst)).not.toContain(true);
    for (let i = 0; i < 5; i++) bursts.judge('link', 'hash', `a${i}`, T + i);
    const after = bursts.judge('link', 'hash', 'later', T + 20_000);
    expect(after).toEqual({ burst: false, started: false, visits: 1 });
    for (let i = 0; i < 2; i++) bursts.judge('link', 'hash', `b${i}`, T + 20_001 + i);
    expect(bursts.judge('link', 'hash', 'again', T + 20_010)).toMatchObject({ burst: true, started: true });
  });

  it('gives a redelivered visit the judgement it got the first time, without counting it again', () => {
    const bursts = burstDetector({ maxVisits: 2, windowSec: 10 });
    const first = ['v0', 'v1', 'v2'].map((id, i) => bursts.judge('link', 'hash', id, T + i));
    const again = ['v0', 'v1', 'v2'].map((id, i) => bursts.judge('link', 'hash', id, T + i));
    expect(again).toEqual(first);
    expect(first[2]).toMatchObject({ burst: true, started: true });
    expect(bursts.judge('link', 'hash', 'v3', T + 3)).toMatchObject({ burst: true, started: false, visits: 4 });
  });

  it('keeps judging a long burst with bounded memory, and is off with maxVisits 0', () => {
    const bursts = burstDetector({ maxVisits: 5, windowSec: 60 });
    const judged = Array.from({ length: 1_000 }, (_, i) => bursts.judge('link', 'hash', `v${i}`, T + i));
    expect(judged.filter((j) => j.started)).toHaveLength(1);
    expect(judged.slice(5).every((j) => j.burst)).toBe(true);
    const off = burstDetector({ maxVisits: 0, windowSec: 10 });
    expect(Array.from({ length: 100 }, (_, i) => off.judge('link', 'hash', `v${i}`, T).burst)).not.toContain(true);
  });
});
