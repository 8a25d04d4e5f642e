import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '../context.js';
import { closeContext, createTestContext, uniqueName } from '../testing/context.js';

let context: Context;

beforeAll(async () => {
  context = await createTestContext();
});

afterAll(async () => {
  await closeContext(context);
});

const row = (subdomain: string) => ({ visit_id: uuidv7(), ts: '2026-11-21 10:00:00.000', kind: 'visit', owner_id: 'o', subdomain, link_id: 'l', slug: 's', ip_public: '203.0.113.1' });

async function countOf(subdomain: string): Promise<number> {
  const result = await context.analytics.client.query({
    query: 'SELECT count() AS n FROM visits WHERE subdomain = {subdomain:String}',
    query_params: { subdomain },
    format: 'JSONEachRow',
  });
  return Number((await result.json<{ n: number }>())[0]!.n);
}

describe('analytics inserts', () => {
  it('keeps a deduplication token to its own insert: later inserts without one are all stored', async () => {
    const subdomain = uniqueName('tokens');
    const { client } = context.analytics;
    await client.insert({ table: 'visits', values: [row(subdomain)], format: 'JSONEachRow', clickhouse_settings: { insert_deduplication_token: uniqueName('token') } });
    await client.insert({ table: 'visits', values: [row(subdomain)], format: 'JSONEachRow' });
    await client.insert({ table: 'visits', values: [row(subdomain)], format: 'JSONEachRow' });
    expect(await countOf(subdomain)).toBe(3);
  });

  it('keeps the token from an INSERT … SELECT sent as a command after a tokened insert', async () => {
    const subdomain = uniqueName('command');
    const { client } = context.analytics;
    await client.insert({ table: 'visits', values: [row(subdomain)], format: 'JSONEachRow', clickhouse_settings: { insert_deduplication_token: uniqueName('token') } });
    for (let i = 0; i < 2; i++) {
      await client.command({
        query: `INSERT INTO visits (visit_id, ts, kind, owner_id, subdomain, link_id, slug, ip_public)
                SELECT generateUUIDv7(), now64(3), 'visit', 'o', {subdomain:String}, 'l', 's', '203.0.113.2'`,
        query_params: { subdomain },
      });
    }
    expect(await countOf(subdomain)).toBe(3);
  });

  it('still deduplicates an insert repeated with the same token', async () => {
    const subdomain = uniqueName('same-token');
    const { client } = context.analytics;
    const values = [row(subdomain), row(subdomain)];
    const token = uniqueName('token');
    await client.insert({ table: 'visits', values, format: 'JSONEachRow', clickhouse_settings: { insert_deduplication_token: token } });
    await client.insert({ table: 'visits', values: [row(subdomain)], format: 'JSONEachRow' });
    await client.insert({ table: 'visits', values, format: 'JSONEachRow', clickhouse_settings: { insert_deduplication_token: token } });
    expect(await countOf(subdomain)).toBe(3);
  });
});
