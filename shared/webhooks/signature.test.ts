import { describe, expect, it } from 'vitest';
import { signBody, verifyDelivery, verifySignature } from './signature.js';

describe('webhook signatures', () => {
  it("matches GitHub's published test vector", () => {
    const expected = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';
    expect(signBody("It's a Secret to Everybody", 'Hello, World!')).toBe(expected);
    expect(verifySignature("It's a Secret to Everybody", 'Hello, World!', expected)).toBe(true);
    expect(verifySignature("It's a Secret to Everybody", Buffer.from('Hello, World!'), expected)).toBe(true);
  });

  it('refuses another secret, another body, and headers of the wrong form or length', () => {
    const secret = "It's a Secret to Everybody";
    const good = signBody(secret, 'Hello, World!');
    expect(verifySignature('another secret', 'Hello, World!', good)).toBe(false);
    expect(verifySignature(secret, 'Hello, World?', good)).toBe(false);
    for (const header of [undefined, null, '', 'sha256=', good.slice(0, -1), `${good}0`, good.toUpperCase(), good.replace('sha256=', 'sha1='), good.slice(7)]) {
      expect(verifySignature(secret, 'Hello, World!', header), String(header)).toBe(false);
    }
  });

  it('refuses a replay: a delivered_at outside the 5-minute tolerance', () => {
    const secret = 'whsec_test';
    const now = Date.parse('2026-11-21T12:00:00Z');
    const body = (at: string) => JSON.stringify({ ok: true, data: {}, meta: {}, event: 'visit.new', delivered_at: at });
    const fresh = body('2026-11-21T11:57:00Z');
    expect(verifyDelivery(secret, fresh, signBody(secret, fresh), now)).toMatchObject({ event: 'visit.new' });
    const old = body('2026-11-21T11:54:59Z');
    expect(verifyDelivery(secret, old, signBody(secret, old), now)).toBeUndefined();
    expect(verifyDelivery(secret, fresh, signBody('other', fresh), now)).toBeUndefined();
    const missing = JSON.stringify({ ok: true, event: 'visit.new' });
    expect(verifyDelivery(secret, missing, signBody(secret, missing), now)).toBeUndefined();
  });
});
