import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { closeContext } from '#tests/support/context.js';
import type { TestOwner } from '#tests/support/owners.js';
import { startTestPlatform } from '#tests/support/platform.js';
import { waitFor } from '#tests/support/wait.js';
import type { Consumer } from '#shared/message-log/message-log.js';
import { startVisitConsumer } from '../enricher/visit-consumer.js';

// Header bytes as a socket carries them: Node's HTTP parser hands header values over as Latin-1
// (one character per byte), so a raw UTF-8 Referer was stored as mojibake. fetch and inject cannot
// send raw bytes, hence a socket; the visit is read back from ClickHouse through the visit list.
const DEADLINE_MS = 60_000;

let context: Context;
let app: FastifyInstance;
let owner: TestOwner;
let subdomain: string;
let enricher: Consumer;
let port: number;

beforeAll(async () => {
  ({ context, app, owner, subdomain } = await startTestPlatform({ RATE_LIMIT_REDIRECT: '100000:60', RATE_LIMIT_TRACK: '1000:60' }));
  enricher = await startVisitConsumer(context);
  await app.listen({ port: 0, host: '127.0.0.1' });
  port = (app.server.address() as AddressInfo).port;
}, 120_000);

afterAll(async () => {
  await enricher?.stop();
  await app?.close();
  await closeContext(context);
});

type Json = Record<string, any>;

/** Sends one HTTP/1.1 request written byte for byte; resolves with the status line and the body. */
function rawRequest(head: (string | Buffer)[], body = ''): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      resolve({ status: Number(text.split(' ', 2)[1]), body: text.slice(text.indexOf('\r\n\r\n') + 4) });
    });
    const lines = head.map((part) => (typeof part === 'string' ? Buffer.from(part, 'latin1') : part));
    socket.write(Buffer.concat([...lines, Buffer.from(`Connection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)]));
  });
}

/** A header line whose value is `bytes` as they are, after `name: `. */
const headerLine = (name: string, ...bytes: (string | Buffer)[]) =>
  Buffer.concat([Buffer.from(`${name}: `), ...bytes.map((part) => (typeof part === 'string' ? Buffer.from(part, 'utf8') : part)), Buffer.from('\r\n')]);

async function createLink(): Promise<Json> {
  const response = await app.inject({ method: 'POST', url: '/api/v1/links', headers: owner.auth, payload: { subdomain, target_url: 'https://example.com/' } });
  expect(response.statusCode).toBe(201);
  return response.json().data;
}

/** The owner's stored visits of a link, read through GET /api/v1/visits once the enricher wrote them. */
async function storedVisits(query: string, count = 1): Promise<Json[]> {
  return waitFor(
    async () => {
      const response = await app.inject({ method: 'GET', url: `/api/v1/visits?${query}`, headers: owner.auth });
      const visits = response.json().data?.visits as Json[] | undefined;
      return visits && visits.length >= count && visits;
    },
    DEADLINE_MS,
    { message: `visits of ${query}` },
  );
}

describe('request headers with bytes beyond ASCII', () => {
  it('stores a raw UTF-8 Referer, User-Agent and Accept-Language of a redirect as the characters sent', async () => {
    const link = await createLink();
    const answer = await rawRequest([
      `GET /${link.slug} HTTP/1.1\r\nHost: ${subdomain}.localhost:8080\r\n`,
      headerLine('Referer', 'https://例え.jp/パス?q=ünï'),
      headerLine('User-Agent', 'Mozilla/5.0 (X11; Linux x86_64) Navigateur-é/1.0 🚀'),
      headerLine('Accept-Language', 'de-DE,ü;q=0.5'),
    ]);
    expect(answer.status).toBe(302);
    const [visit] = await storedVisits(`link_id=${link.id}`);
    expect(visit).toMatchObject({
      referrer: 'https://例え.jp/パス?q=ünï',
      user_agent: 'Mozilla/5.0 (X11; Linux x86_64) Navigateur-é/1.0 🚀',
      accept_language: 'de-DE,ü;q=0.5',
    });
  });

  it('keeps bytes that are no UTF-8 without mojibake: percent-encoded in the Referer, U+FFFD in the User-Agent', async () => {
    const link = await createLink();
    const answer = await rawRequest([
      `GET /${link.slug} HTTP/1.1\r\nHost: ${subdomain}.localhost:8080\r\n`,
      // Latin-1 "café" (0xE9 alone is no UTF-8), then valid UTF-8 "中".
      headerLine('Referer', 'https://old.example/caf', Buffer.from([0xe9]), '/中'),
      headerLine('User-Agent', 'Broken/', Buffer.from([0xff, 0xfe]), ' 中'),
    ]);
    expect(answer.status).toBe(302);
    const [visit] = await storedVisits(`link_id=${link.id}`);
    expect(visit).toMatchObject({ referrer: 'https://old.example/caf%E9/%E4%B8%AD', user_agent: 'Broken/\ufffd\ufffd 中' });
  });

  it('stores the UTF-8 User-Agent of a visit the tracker starts as the characters sent', async () => {
    const body = JSON.stringify({ subdomain, analytics: true, lan_ip: false, page: { referrer: 'https://news.example/', query: 'utm_source=raw-headers' } });
    const answer = await rawRequest(
      [`POST /tracker/consent HTTP/1.1\r\nHost: localhost:8080\r\nContent-Type: text/plain;charset=UTF-8\r\n`, headerLine('User-Agent', 'Браузер/2.0 (中文)')],
      body,
    );
    expect(answer.status).toBe(200);
    const visitId = JSON.parse(answer.body).data.visit_id as string;
    const visits = await storedVisits(`subdomain=${subdomain}&kind=beacon`);
    expect(visits.find((visit) => visit.visit_id === visitId)).toMatchObject({ user_agent: 'Браузер/2.0 (中文)', utm_source: 'raw-headers' });
  });
});
