import type { FastifyInstance } from 'fastify';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { closeContext } from '#tests/support/context.js';
import type { TestOwner } from '#tests/support/owners.js';
import { startTestPlatform } from '#tests/support/platform.js';
import type { RawVisit } from '#shared/visits/raw-visit.js';
import { enrich } from '#shared/visits/enrichment.js';
import { limitWatcher } from './limits.js';
import { insertVisits } from './visit-writer.js';
import { createRepositories } from '#services/repositories.js';
import { withRepositories } from '#tests/support/repositories.js';

let context: Context;
let app: FastifyInstance;
let owner: TestOwner;
let subdomain: string;

beforeAll(async () => {
  ({ context, app, owner, subdomain } = await startTestPlatform());
});

afterAll(async () => {
  await app?.close();
  await closeContext(context);
});

/** A link with a limit, and as many people's visits of it stored as the limit allows. */
async function linkAtItsLimit(maxVisits: number): Promise<{ linkId: string; visits: RawVisit[] }> {
  const created = await app.inject({
    method: 'POST',
    url: '/api/v1/links',
    headers: owner.auth,
    payload: { subdomain, target_url: 'https://example.com/', max_visits: maxVisits },
  });
  const link = created.json().data as { id: string; slug: string };
  const visits: RawVisit[] = Array.from({ length: maxVisits }, (_, i) => ({
    visit_id: uuidv7(),
    ts: new Date(Date.now() + i).toISOString(),
    kind: 'visit',
    owner_id: owner.id,
    subdomain,
    link_id: link.id,
    slug: link.slug,
    ip_public: `203.0.113.${i + 1}`,
    user_agent: 'Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0',
    referrer: '',
    accept_language: '',
    query: '',
    expects_beacon: false,
  }));
  await insertVisits(createRepositories(context), visits, (visit) => enrich(visit, { lookup: () => undefined }));
  return { linkId: link.id, visits };
}

describe('limit watcher', () => {
  it('raises link.limit_reached again for a batch redelivered before its events were published, and only then', async () => {
    const limits = await limitWatcher(withRepositories(context));
    try {
      const { linkId, visits } = await linkAtItsLimit(2);
      const first = await limits.check(visits);
      expect(first).toHaveLength(1);
      expect(first[0]).toMatchObject({ type: 'link.limit_reached', data: { link_id: linkId, max_visits: 2, visits: 2 } });
      // The batch failed before its events were published: redelivered, it raises the same event (same origin: same id).
      const again = await limits.check(visits);
      expect(again).toHaveLength(1);
      expect(again[0]!.origin).toEqual(first[0]!.origin);
      expect(again[0]!.data).toMatchObject({ link_id: linkId, reached_at: (first[0]!.data as { reached_at: string }).reached_at });
      // Published: a redelivery raises nothing more.
      limits.announced(again);
      expect(await limits.check(visits)).toEqual([]);
    } finally {
      await limits.close();
    }
  });

  it('leaves the event to the enricher that marked the link', async () => {
    const [marking, other] = [await limitWatcher(withRepositories(context)), await limitWatcher(withRepositories(context))];
    try {
      const { visits } = await linkAtItsLimit(3);
      expect(await marking.check(visits)).toHaveLength(1);
      expect(await other.check(visits)).toEqual([]);
    } finally {
      await Promise.all([marking.close(), other.close()]);
    }
  });
});
