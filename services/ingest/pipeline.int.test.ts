import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '../../shared/context.js';
import { closeContext, createTestContext } from '../../shared/testing/context.js';
import { claimSubdomain, createOwner, type TestOwner } from '../../shared/testing/owners.js';
import { waitFor } from '../../shared/testing/wait.js';
import type { Consumer } from '../../shared/visit-log/visit-log.js';
import { buildApp } from '../api/app.js';
import { startEnricher } from '../enricher/enricher.js';

// End to end: redirects at the edge → visit log (in-process, or Kafka in the services run) →
// enricher → ClickHouse. Kafka group joins take seconds: generous, bounded waits.
const DEADLINE_MS = 60_000;

let context: Context;
let app: FastifyInstance;
let ingest: FastifyInstance;
let owner: TestOwner;
let subdomain: string;
let enricher: Consumer | undefined;

beforeAll(async () => {
  context = await createTestContext({ RATE_LIMIT_REDIRECT: '1000000:60' });
  const built = await buildApp(context);
  app = built.app;
  ingest = built.ingest!;
  owner = await createOwner(context, app);
  subdomain = await claimSubdomain(app, owner);
});

afterAll(async () => {
  await enricher?.stop();
  await app?.close();
  await closeContext(context);
});

async function rowsOf(linkId: string): Promise<{ total: number; distinct: number }> {
  const result = await context.analytics.client.query({
    query: 'SELECT count() AS total, uniqExact(visit_id) AS distinct FROM visits FINAL WHERE link_id = {linkId:String}',
    query_params: { linkId },
    format: 'JSONEachRow',
  });
  const [row] = await result.json<{ total: number; distinct: number }>();
  return { total: Number(row!.total), distinct: Number(row!.distinct) };
}

async function redirects(slug: string, count: number, from: number) {
  for (let i = 0; i < count; i += 25) {
    const answers = await Promise.all(
      Array.from({ length: Math.min(25, count - i) }, (_, j) =>
        ingest.inject({ method: 'GET', url: `/${slug}?n=${from + i + j}`, headers: { host: `${subdomain}.localhost:8080`, 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64)' } }),
      ),
    );
    for (const answer of answers) expect(answer.statusCode).toBe(302);
  }
}

describe('redirects → visit log → enricher → ClickHouse', () => {
  it('turns N redirects into exactly N rows, also when the enricher stops mid-stream and starts again', { timeout: 120_000 }, async () => {
    const created = await app.inject({ method: 'POST', url: '/api/v1/links', headers: owner.auth, payload: { subdomain, target_url: 'https://example.com/' } });
    const link = created.json().data;
    enricher = await startEnricher(context);
    await redirects(link.slug, 150, 0);
    await waitFor(async () => (await rowsOf(link.id)).total > 0, DEADLINE_MS, { message: 'first rows' });
    // Stopped mid-stream: the redirects go on, the visits wait in the log.
    await enricher.stop();
    enricher = undefined;
    await redirects(link.slug, 150, 150);
    enricher = await startEnricher(context);
    await redirects(link.slug, 100, 300);
    const final = await waitFor(async () => {
      const rows = await rowsOf(link.id);
      return rows.total >= 400 && rows;
    }, DEADLINE_MS, { message: '400 rows', intervalMs: 200 });
    expect(final).toEqual({ total: 400, distinct: 400 });
  });
});
