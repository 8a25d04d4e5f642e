/**
 * A local stand-in of Kutt's API v2 for the importer's tests: `GET /api/v2/links?limit=&skip=` with
 * `X-API-KEY`, answering `{ limit, skip, total, data }` of Link objects as thedevs-network/kutt's
 * OpenAPI document describes them (at most 50 per page, as Kutt caps `limit`), and Kutt's
 * `{ error }` body with 401 for a wrong key. Not Kutt itself: a Node application with its own
 * database cannot run here.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SourceLink } from './import-fixtures.js';

export interface KuttStandIn {
  url: string;
  apiKey: string;
  requests: string[];
  close(): Promise<void>;
}

export async function startKuttStandIn(links: SourceLink[]): Promise<KuttStandIn> {
  const apiKey = 'kutt-standin-key-0123456789abcdef0123';
  const requests: string[] = [];
  const rows = links.map((link, i) => ({
    id: randomUUID(),
    address: link.slug,
    banned: false,
    created_at: link.created.toISOString(),
    description: i % 2 === 0 ? link.title : null,
    expire_in: null,
    link: `https://kutt.test/${link.slug}`,
    password: false,
    target: link.target,
    updated_at: link.created.toISOString(),
    visit_count: i,
  }));
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://stand-in');
    requests.push(`${url.pathname}${url.search}`);
    const send = (status: number, body: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
      response.end(JSON.stringify(body));
    };
    if (request.headers['x-api-key'] !== apiKey) return send(401, { error: 'Unauthorized.' });
    if (url.pathname !== '/api/v2/links') return send(404, { error: 'Not found.' });
    const limit = Math.min(Number(url.searchParams.get('limit') ?? 10), 50);
    const skip = Number(url.searchParams.get('skip') ?? 0);
    return send(200, { limit, skip, total: rows.length, data: rows.slice(skip, skip + limit) });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    apiKey,
    requests,
    close: () => new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve()))),
  };
}
