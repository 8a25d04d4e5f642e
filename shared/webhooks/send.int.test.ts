import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CheckedTarget } from './guard.js';
import { EXCERPT_CHARS, postTo } from './send.js';

// postTo against a receiver on loopback. The guard is not involved: each test builds the target the
// guard would have checked, public (`allowlisted: false`) or admitted by WEBHOOK_ALLOWLIST.
let receiver: Server;
let port: number;

beforeAll(async () => {
  receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/huge') res.writeHead(200).end('é'.repeat(100_000));
      else if (req.url === '/redirect') res.writeHead(302, { location: 'http://10.1.2.3/secret-place' }).end('moved');
      else res.writeHead(500).end('{"error":"internal detail"}');
    });
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  port = (receiver.address() as AddressInfo).port;
});

afterAll(() => {
  receiver?.close();
});

const target = (path: string, allowlisted: boolean, at = port): CheckedTarget => ({
  url: new URL(`http://127.0.0.1:${at}${path}`),
  host: '127.0.0.1',
  port: at,
  address: '127.0.0.1',
  family: 4,
  allowlisted,
});
const post = (path: string, allowlisted: boolean, at?: number) => postTo(target(path, allowlisted, at), '{}', { 'content-type': 'application/json' }, 2_000);

describe('postTo', () => {
  it("keeps the first EXCERPT_CHARS characters of a public receiver's answer, and its redirect target", async () => {
    const huge = await post('/huge', false);
    expect(huge).toMatchObject({ statusCode: 200, error: null });
    expect(huge.excerpt).toBe('é'.repeat(EXCERPT_CHARS));
    expect((await post('/fail', false)).excerpt).toBe('{"error":"internal detail"}');
    expect((await post('/redirect', false)).error).toBe('redirect 302 not followed (to http://10.1.2.3/secret-place)');
  });

  // Issue 23: an internal service's answers must not reach the tenant who owns the webhook.
  it('keeps nothing a receiver admitted by WEBHOOK_ALLOWLIST said: no excerpt, no redirect target, an error code only', async () => {
    expect(await post('/huge', true)).toMatchObject({ statusCode: 200, error: null, excerpt: null, latencyMs: expect.any(Number) });
    expect(await post('/fail', true)).toMatchObject({ statusCode: 500, error: 'HTTP 500', excerpt: null });
    expect(await post('/redirect', true)).toMatchObject({ statusCode: 302, error: 'redirect 302 not followed', excerpt: null });
    // A port nothing listens on (the receiver's, once closed elsewhere): the error names no address.
    const idle = createServer();
    idle.listen(0, '127.0.0.1');
    await once(idle, 'listening');
    const closedPort = (idle.address() as AddressInfo).port;
    await new Promise((resolve) => idle.close(resolve));
    expect(await post('/', true, closedPort)).toMatchObject({ statusCode: null, error: 'ECONNREFUSED', excerpt: null });
    expect((await post('/', false, closedPort)).error).toMatch(/^ECONNREFUSED: .*127\.0\.0\.1/);
  });
});
