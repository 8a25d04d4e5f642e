import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { linksRepository } from '#shared/links/links.repository.js';
import { closeContext, createTestContext } from '#tests/support/context.js';
import { claimSubdomain, createOwner } from '#tests/support/owners.js';
import { buildApp } from '../app.js';
import { createLinkCache } from './link-cache.js';

let context: Context;
let subdomain: string;

beforeAll(async () => {
  context = await createTestContext();
  const { app } = await buildApp(context);
  const owner = await createOwner(context, app);
  subdomain = await claimSubdomain(app, owner);
  const created = await app.inject({
    method: 'POST',
    url: '/api/v1/links',
    headers: owner.auth,
    payload: { subdomain, slug: 'kept', target_url: 'https://example.com/kept' },
  });
  expect(created.statusCode).toBe(201);
  await app.close();
});

afterAll(async () => {
  await closeContext(context);
});

describe('the edge link cache while Postgres cannot be reached', () => {
  it('keeps serving a cached link whose re-read fails, and tries again after the retry interval, not on every redirect', async () => {
    // The cache's own links repository, over a database that breaks: a broken one fails every read, as a Postgres that went away does.
    let reads = 0;
    let broken = false;
    const db = new Proxy(context.db.db, {
      get(target, property) {
        if (property === 'selectFrom') {
          return (...args: unknown[]) => {
            reads++;
            if (broken) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
            return (target.selectFrom as (...a: unknown[]) => unknown)(...args);
          };
        }
        const value = Reflect.get(target, property, target) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const cache = await createLinkCache({ ...context, repositories: { links: linksRepository(db) } }, { freshMs: 50, refreshRetryMs: 300 });
    try {
      expect(await cache.lookup(subdomain, 'kept')).toMatchObject({ target_url: 'https://example.com/kept' });
      broken = true;
      await sleep(80);
      const before = reads;
      // Stale now: served, and re-read once in the background, which fails (redirects a millisecond apart).
      for (let i = 0; i < 20; i++) {
        expect(await cache.lookup(subdomain, 'kept')).toMatchObject({ target_url: 'https://example.com/kept' });
        await sleep(1);
      }
      await sleep(20);
      expect(reads - before).toBe(1);
      // After the retry interval, one more try; still served.
      await sleep(350);
      for (let i = 0; i < 20; i++) {
        expect(await cache.lookup(subdomain, 'kept')).toMatchObject({ target_url: 'https://example.com/kept' });
        await sleep(1);
      }
      await sleep(20);
      expect(reads - before).toBe(2);
      // Back: the next re-read succeeds and the entry is fresh again.
      broken = false;
      await sleep(350);
      expect(await cache.lookup(subdomain, 'kept')).toMatchObject({ target_url: 'https://example.com/kept' });
    } finally {
      await cache.close();
    }
  });
});
