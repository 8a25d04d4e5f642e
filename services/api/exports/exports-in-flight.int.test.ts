import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { createInFlightGuard, IN_FLIGHT_LIMITS, type InFlightGuard } from '#shared/http/in-flight.js';
import { closeContext, createTestContext } from '#tests/support/context.js';
import { claimSubdomain, createOwner, type TestOwner } from '#tests/support/owners.js';
import { buildApp } from '#services/app.js';

let context: Context;
let app: FastifyInstance;
let inFlight: InFlightGuard;
let alice: TestOwner;
let bob: TestOwner;
let aliceSub: string;
let bobSub: string;

beforeAll(async () => {
  context = await createTestContext();
  // The test holds this guard's slots to stand for exports in flight.
  inFlight = createInFlightGuard();
  ({ app } = await buildApp(context, { inFlight }));
  [alice, bob] = await Promise.all([createOwner(context, app), createOwner(context, app)]);
  [aliceSub, bobSub] = await Promise.all([claimSubdomain(app, alice), claimSubdomain(app, bob)]);
});

afterAll(async () => {
  await app?.close();
  await closeContext(context);
});

const exported = (owner: TestOwner, query: string) => app.inject({ method: 'GET', url: `/api/v1/export?${query}`, headers: owner.auth });

describe('bounded XLSX and PDF exports per account', () => {
  it("answers 429 rate_limited with Retry-After to an XLSX or PDF export while the account's are all in flight; CSV, JSON and other accounts still answer", async () => {
    const held = Array.from({ length: IN_FLIGHT_LIMITS.export.max }, () => inFlight.acquire('export', alice.id));
    try {
      for (const format of ['xlsx', 'pdf']) {
        const refused = await exported(alice, `format=${format}&subdomain=${aliceSub}`);
        expect(refused.statusCode, format).toBe(429);
        expect(refused.headers['retry-after']).toBe(String(IN_FLIGHT_LIMITS.export.retryAfterSec));
        expect(refused.headers['content-type']).toMatch(/^application\/json/);
        expect(refused.json()).toMatchObject({
          ok: false,
          error: { code: 'rate_limited', details: { reason: 'too_many_in_flight', work: 'export', limit: IN_FLIGHT_LIMITS.export.max } },
        });
      }
      for (const format of ['csv', 'json']) expect((await exported(alice, `format=${format}&subdomain=${aliceSub}`)).statusCode, format).toBe(200);
      expect((await exported(bob, `format=xlsx&subdomain=${bobSub}`)).statusCode).toBe(200);
    } finally {
      for (const release of held) release();
    }
    expect((await exported(alice, `format=xlsx&subdomain=${aliceSub}`)).statusCode).toBe(200);
  });

  it('gives the slot back when the export has been sent, and when it is refused before it starts', async () => {
    for (const format of ['xlsx', 'pdf']) {
      const sent = await exported(alice, `format=${format}&subdomain=${aliceSub}`);
      expect(sent.statusCode, format).toBe(200);
      expect(inFlight.held('export', alice.id), format).toBe(0);
      // Another owner's subdomain: 403 before any byte.
      const refused = await exported(alice, `format=${format}&subdomain=${bobSub}`);
      expect(refused.json().error.code).toBe('not_owner');
      expect(inFlight.held('export', alice.id), format).toBe(0);
    }
    // As many exports one after another as the bound several times over: none is refused.
    for (let i = 0; i < IN_FLIGHT_LIMITS.export.max * 3; i++) expect((await exported(alice, `format=pdf&subdomain=${aliceSub}`)).statusCode).toBe(200);
  });
});
