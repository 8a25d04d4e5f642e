/**
 * A local stand-in of YOURLS's API (`yourls-api.php`) for the importer's tests: `action=stats` with
 * `filter=last`, `limit` and `start`, read from the query or a POST form as YOURLS reads $_REQUEST,
 * answering as yourls_api_stats and yourls_get_stats do (YOURLS/YOURLS includes/functions-api.php and
 * functions.php: `links` keyed `link_1`…, `stats.total_links`, `statusCode` 200; values as MySQL gives
 * them, strings), and 403 `{ message: "Please log in", errorCode: "403" }` without a valid signature
 * or username and password. Not YOURLS itself: a PHP application with its own database cannot run here.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SourceLink } from './import-fixtures.js';

export interface YourlsStandIn {
  url: string;
  signature: string;
  username: string;
  password: string;
  /** The parameters of each request, and whether they came in the URL. */
  requests: { params: Record<string, string>; inUrl: boolean }[];
  close(): Promise<void>;
}

const body = (request: IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    let text = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (text += chunk));
    request.on('end', () => resolve(text));
    request.on('error', reject);
  });

export async function startYourlsStandIn(links: SourceLink[]): Promise<YourlsStandIn> {
  const credentials = { signature: '1002a612b4', username: 'admin', password: 'correct horse' };
  const requests: YourlsStandIn['requests'] = [];
  // Newest first, as `filter=last` orders by timestamp.
  const rows = [...links].sort((a, b) => b.created.getTime() - a.created.getTime());
  const server = createServer((request, response) => {
    void body(request).then((text) => {
      const url = new URL(request.url ?? '/', 'http://stand-in');
      const params = Object.fromEntries([...url.searchParams, ...new URLSearchParams(text)]);
      requests.push({ params, inUrl: url.search.length > 1 });
      const send = (status: number, payload: unknown) => {
        response.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' });
        response.end(JSON.stringify(payload));
      };
      if (url.pathname !== '/yourls-api.php') return send(404, { message: 'Not found' });
      const signed = params.signature === credentials.signature;
      const logged = params.username === credentials.username && params.password === credentials.password;
      if (!signed && !logged) return send(403, { message: 'Please log in', errorCode: '403', callback: '' });
      if (params.action !== 'stats') return send(400, { message: `Unknown or missing "action" parameter`, errorCode: '400' });
      const limit = Number(params.limit ?? 10);
      const start = Number(params.start ?? 0);
      const page = rows.slice(start, start + limit);
      const answer: Record<string, unknown> = {};
      if (page.length > 0) {
        answer.links = Object.fromEntries(
          page.map((link, i) => [
            `link_${i + 1}`,
            {
              shorturl: `https://sho.rt/${link.slug}`,
              url: link.target,
              title: link.title,
              timestamp: link.created.toISOString().slice(0, 19).replace('T', ' '),
              ip: '127.0.0.1',
              clicks: String(i),
            },
          ]),
        );
      }
      answer.stats = { total_links: String(rows.length), total_clicks: '0' };
      answer.statusCode = 200;
      answer.simple = 'Need either XML or JSON format for stats';
      answer.message = 'success';
      return send(200, answer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    ...credentials,
    requests,
    close: () => new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve()))),
  };
}
