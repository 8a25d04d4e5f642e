import { describe, expect, it } from 'vitest';
import { AppError } from '../errors.js';
import { createInFlightGuard } from './in-flight.js';

const limits = { qr_png: { max: 2, retryAfterSec: 1 }, export: { max: 1, retryAfterSec: 5 } };

describe('in-flight guard', () => {
  it("refuses an account's work past its bound with 429 rate_limited, Retry-After and the reason, per account and per kind", () => {
    const guard = createInFlightGuard(limits);
    guard.acquire('qr_png', 'a');
    guard.acquire('qr_png', 'a');
    let refusal: unknown;
    try {
      guard.acquire('qr_png', 'a');
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(AppError);
    expect(refusal).toMatchObject({
      code: 'rate_limited',
      status: 429,
      headers: { 'Retry-After': '1' },
      details: { reason: 'too_many_in_flight', work: 'qr_png', limit: 2, retry_after: 1 },
    });
    // Another account, and another kind of work of the same account, have their own slots.
    expect(() => guard.acquire('qr_png', 'b')).not.toThrow();
    expect(() => guard.acquire('export', 'a')).not.toThrow();
    expect(() => guard.acquire('export', 'a')).toThrow(expect.objectContaining({ headers: { 'Retry-After': '5' } }));
  });

  it('gives a slot back once however often its release is called', () => {
    const guard = createInFlightGuard(limits);
    const first = guard.acquire('qr_png', 'a');
    guard.acquire('qr_png', 'a');
    first();
    first();
    expect(guard.held('qr_png', 'a')).toBe(1);
    const third = guard.acquire('qr_png', 'a');
    expect(() => guard.acquire('qr_png', 'a')).toThrow(AppError);
    third();
    expect(guard.held('qr_png', 'a')).toBe(1);
  });
});
