import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { linksRepository } from '#shared/links/links.repository.js';
import { publishLinkNotice, toRedirectLink, type RedirectLink } from '#shared/links/link-notices.js';
import { createRepositories } from '#services/repositories.js';
import { publishSubdomainNotice } from '#shared/subdomains/subdomain-notices.js';
import { waitFor } from '#tests/support/wait.js';
import { closeContext, createTestContext } from '#tests/support/context.js';
import { claimSubdomain, createOwner } from '#tests/support/owners.js';
import { buildApp } from '../app.js';
import { createLinkCache } from './link-cache.js';
import { createTrackerOrigins } from './tracker-origins.js';

/** A read held until `release()`: `started` resolves when the read was asked for. */
function gate() {
  let release!: () => void;
  let started!: () => void;
  const open = new Promise<void>((resolve) => (release = resolve));
  const asked = new Promise<void>((resolve) => (started = resolve));
  return { open, asked, release, started };
}

let context: Context;
let subdomain: string;
let kept: RedirectLink;

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
  const row = await linksRepository(context.db.db).findLiveBySlug(subdomain, 'kept');
  kept = toRedirectLink(row!);
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

describe('a change notice that arrives while a read is in flight (it aborts the read in lru-cache)', () => {
  it("the redirect waiting on a link's first read gets the notice's link, not a rejection (it answered 500)", async () => {
    const held = gate();
    const links = linksRepository(context.db.db);
    // Not warmed, so that the lookup is a miss that reads.
    const slowLinks = {
      ...links,
      newestLive: async () => [],
      findLiveBySlug: async (...args: Parameters<typeof links.findLiveBySlug>) => (held.started(), await held.open, links.findLiveBySlug(...args)),
    };
    const cache = await createLinkCache({ ...context, repositories: { links: slowLinks } });
    try {
      // Settled either way, so that a rejection fails the test instead of going unhandled.
      const lookup = Promise.resolve(cache.lookup(subdomain, 'kept')).then(
        (link) => ({ link }),
        (error: unknown) => ({ error: String(error) }),
      );
      await held.asked;
      const changed = { ...kept, target_url: 'https://example.com/changed', version: kept.version + 1 };
      await publishLinkNotice(context, { kind: 'upsert', link: changed });
      // The notice is applied (it replaces the read in flight) before the read is let go. Until it is,
      // a lookup joins the held read, so each try gives up after 50 ms (on Redis the notice takes a
      // round trip: a try that waited for the held read waited for ever).
      await waitFor(
        () =>
          Promise.race([Promise.resolve(cache.lookup(subdomain, 'kept')).then((link) => link?.target_url === 'https://example.com/changed'), sleep(50, false)]),
        10_000,
      );
      held.release();
      expect(await lookup).toMatchObject({ link: { target_url: 'https://example.com/changed' } });
    } finally {
      held.release();
      await cache.close();
    }
  });

  it("the beacon waiting on a subdomain's first tracker-origins read gets the list read, not a rejection", async () => {
    const held = gate();
    const { subdomains } = createRepositories(context);
    let reads = 0;
    const slowSubdomains = {
      ...subdomains,
      trackerOriginsOf: async (name: string) => (reads++, held.started(), await held.open, subdomains.trackerOriginsOf(name)),
    };
    const origins = await createTrackerOrigins({ ...context, repositories: { subdomains: slowSubdomains } });
    try {
      const settled = (value: ReturnType<typeof origins.of>) =>
        Promise.resolve(value).then(
          (list) => ({ list }),
          (error: unknown) => ({ error: String(error) }),
        );
      const first = settled(origins.of(subdomain));
      const later: ReturnType<typeof settled>[] = [];
      await held.asked;
      const before = reads;
      await publishSubdomainNotice(context, subdomain);
      // The notice dropped the entry whose read is in flight; a second beacon then starts a read of its own.
      await waitFor(() => (later.push(settled(origins.of(subdomain))), reads > before), 10_000);
      held.release();
      // Every beacon settles, the first one with the list read (none: any site).
      expect(await Promise.all([first, ...later])).toEqual([first, ...later].map(() => ({ list: new Set() })));
    } finally {
      held.release();
      await origins.close();
    }
  });
});
