import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '../context.js';
import { createAnalytics, deduplicatedBy } from './analytics.js';
import { closeContext, createTestContext, uniqueName } from '#tests/support/context.js';

let context: Context;

beforeAll(async () => {
  context = await createTestContext();
});

afterAll(async () => {
  await closeContext(context);
});

const row = (subdomain: string) => ({
  visit_id: uuidv7(),
  ts: '2026-11-21 10:00:00.000',
  kind: 'visit',
  owner_id: 'o',
  subdomain,
  link_id: 'l',
  slug: 's',
  ip_public: '203.0.113.1',
});

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
    await client.insert({
      table: 'visits',
      values: [row(subdomain)],
      format: 'JSONEachRow',
      clickhouse_settings: { insert_deduplication_token: uniqueName('token') },
    });
    await client.insert({ table: 'visits', values: [row(subdomain)], format: 'JSONEachRow' });
    await client.insert({ table: 'visits', values: [row(subdomain)], format: 'JSONEachRow' });
    expect(await countOf(subdomain)).toBe(3);
  });

  it('keeps the token from an INSERT … SELECT sent as a command after a tokened insert', async () => {
    const subdomain = uniqueName('command');
    const { client } = context.analytics;
    await client.insert({
      table: 'visits',
      values: [row(subdomain)],
      format: 'JSONEachRow',
      clickhouse_settings: { insert_deduplication_token: uniqueName('token') },
    });
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

  it('inserts rows encoded by the caller: its token drops a repeat and stays with that insert, a bad row stores nothing', async () => {
    const subdomain = uniqueName('encoded');
    const columns: [string, ...string[]] = ['visit_id', 'ts', 'kind', 'owner_id', 'subdomain', 'link_id', 'slug', 'ip_public'];
    const encoded = (rows: Record<string, string>[]) =>
      Buffer.from(rows.map((entry) => JSON.stringify(columns.map((column) => entry[column]))).join('\n'), 'utf8');
    const body = encoded([row(subdomain), row(subdomain)]);
    const token = uniqueName('token');
    await context.analytics.insertEncoded({ table: 'visits', columns, body, settings: deduplicatedBy(token) });
    await context.analytics.insertEncoded({ table: 'visits', columns, body, settings: deduplicatedBy(token) });
    expect(await countOf(subdomain)).toBe(2);
    // The token went with its statement: the client's next insert, and another encoded one, are stored.
    await context.analytics.client.insert({ table: 'visits', values: [row(subdomain)], format: 'JSONEachRow' });
    await context.analytics.insertEncoded({ table: 'visits', columns, body: encoded([row(subdomain)]), settings: {} });
    expect(await countOf(subdomain)).toBe(4);
    const bad = Buffer.concat([encoded([row(subdomain)]), Buffer.from('\n["not a uuid"]')]);
    await expect(context.analytics.insertEncoded({ table: 'visits', columns, body: bad, settings: {} })).rejects.toThrow();
    expect(await countOf(subdomain)).toBe(4);
  });
});

describe('analytics inserts to a ClickHouse server (a fake HTTP server stands in: none runs here)', () => {
  it("posts encoded rows as the body of INSERT … FORMAT JSONCompactEachRow, with the insert's settings", async () => {
    const received: { url: string; body: string }[] = [];
    const server = createServer((request, response) => {
      let body = '';
      request.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      request.on('end', () => {
        received.push({ url: request.url ?? '', body });
        response.writeHead(200, { 'X-ClickHouse-Summary': '{"written_rows":"2"}' }).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const analytics = createAnalytics({ kind: 'clickhouse', url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
    try {
      const body = Buffer.from('["a",1]\n["é",2]', 'utf8');
      await analytics.insertEncoded({ table: 'visits', columns: ['name', 'n'], body, settings: deduplicatedBy('batch-1') });
      expect(received).toHaveLength(1);
      const url = new URL(received[0]!.url, 'http://x');
      expect(url.searchParams.get('query')).toMatch(/^INSERT INTO visits \(name, n\) FORMAT JSONCompactEachRow\s*$/);
      expect(url.searchParams.get('insert_deduplication_token')).toBe('batch-1');
      expect(url.searchParams.get('deduplicate_blocks_in_dependent_materialized_views')).toBe('1');
      expect(received[0]!.body).toBe('["a",1]\n["é",2]');
    } finally {
      await analytics.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
