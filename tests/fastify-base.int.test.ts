import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '#services/app.js';
import type { Context } from '#shared/context.js';
import { closeContext, createTestContext } from './support/context.js';
import { rawExchange as rawExchangeWith } from './support/raw-http.js';

// What a client meets over a real socket before Fastify sees its request: Node's own answers.

let context: Context;
let app: FastifyInstance;
let port: number;

beforeAll(async () => {
  context = await createTestContext();
  app = (await buildApp(context)).app;
  await app.listen({ port: 0, host: '127.0.0.1' });
  port = (app.server.address() as { port: number }).port;
});

afterAll(async () => {
  await app?.close();
  await closeContext(context);
});

/** Sends raw bytes and reads the whole answer until the server closes the connection. */
const rawExchange = (bytes: string) => rawExchangeWith(port, bytes);

function expectEnvelope(answer: Awaited<ReturnType<typeof rawExchange>>, status: number, code: string) {
  expect(answer.status).toBe(status);
  expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
  const id = answer.headers['x-request-id'];
  expect(id).toMatch(/^[0-9a-f-]{36}$/);
  expect(Number(answer.headers['content-length'])).toBe(Buffer.byteLength(answer.body));
  const body = JSON.parse(answer.body);
  expect(body).toMatchObject({ ok: false, error: { code, request_id: id, docs: `/api/v1/errors#${code}` }, meta: { request_id: id } });
  expect(typeof body.error.message).toBe('string');
  expect(typeof body.meta.server_time_utc).toBe('string');
  // Like every API answer: nothing to sniff, frame or run.
  expect(answer.headers['x-content-type-options']).toBe('nosniff');
  expect(answer.headers['x-frame-options']).toBe('DENY');
  expect(answer.headers['content-security-policy']).toBe("default-src 'none'; frame-ancestors 'none'");
  return body;
}

// Guards issue 23: Node's 400 and 431, written before Fastify, had Fastify's bare body and no X-Request-Id.
describe("Node's own answers (clientError) carry the envelope and X-Request-Id", () => {
  it('a malformed request line answers 400 bad_request', async () => {
    const body = expectEnvelope(await rawExchange('GET /api/v1/health HTTP/1.1 extra\r\nHost: localhost\r\n\r\n'), 400, 'bad_request');
    expect(body.error.details).toMatchObject({ request: 'malformed' });
  });

  it('a malformed header answers 400 bad_request', async () => {
    expectEnvelope(await rawExchange('GET /api/v1/health HTTP/1.1\r\nHost: localhost\r\nNo colon here\r\n\r\n'), 400, 'bad_request');
  });

  it('headers over the limit answer 431 with the code of a field over the limit', async () => {
    const answer = await rawExchange(`GET /api/v1/health HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    const body = expectEnvelope(answer, 431, 'payload_too_large');
    expect(body.error.message).toBe('The request headers are too large.');
    expect(body.error.details).toEqual({ headers: 'too large' });
  });

  it('a well-formed request on the same server still answers normally', async () => {
    const answer = await rawExchange('GET /api/v1/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
    expect(answer.status).toBe(200);
    expect(answer.headers['x-request-id']).toBeTruthy();
  });
});
