import type { FastifyInstance } from 'fastify';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { closeContext } from '#tests/support/context.js';
import type { listenerClient } from '#tests/support/listener.js';
import { createOwner, type TestOwner } from '#tests/support/owners.js';
import { startTestPlatform } from '#tests/support/platform.js';
import { waitFor } from '#tests/support/wait.js';
import { webhooksRepository } from '#shared/webhooks/webhooks.repository.js';
import { verifyDelivery, verifySignature } from '#shared/webhooks/signature.js';
import type { Consumer } from '#shared/message-log/message-log.js';
import { startVisitConsumer } from '#services/enricher/visit-consumer.js';
import { startWorker } from '#services/worker/worker.js';

// Webhooks end to end with a real local receiver (an HTTP server on loopback, admitted by
// WEBHOOK_ALLOWLIST) and a real local SMTP server: events from the API and from redirects go
// through the event bus (in-process, or Kafka in the services run), the dispatcher and the delivery
// jobs (in-process, or BullMQ on Redis). Retries wait 50, 200, 800 and 3200 ms (base 50 ms).
const DEADLINE_MS = 60_000;

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  raw: string;
  at: number;
}

let context: Context;
let app: FastifyInstance;
let ingest: ReturnType<typeof listenerClient>;
let owner: TestOwner;
let subdomain: string;
let worker: Consumer;
let enricher: Consumer;
let receiver: Server;
let base: string;
const received: Received[] = [];
let smtp: SMTPServer;
const mails: string[] = [];

/** What each path of the receiver answers. */
const flaky = new Map<string, number>();
function answer(path: string, res: ServerResponse) {
  if (path.startsWith('/ok')) return res.writeHead(200, { 'content-type': 'text/plain' }).end('thanks');
  if (path.startsWith('/fail')) return res.writeHead(500).end('{"error":"down for maintenance"}');
  if (path.startsWith('/gone')) return res.writeHead(410).end('gone');
  if (path.startsWith('/redirect')) return res.writeHead(302, { location: `${base}/loopback-target` }).end();
  if (path.startsWith('/slow')) return setTimeout(() => res.writeHead(200).end('late'), 3000);
  if (path.startsWith('/huge')) return res.writeHead(200).end('x'.repeat(200_000));
  if (path.startsWith('/flaky')) {
    const left = flaky.get(path) ?? 2;
    flaky.set(path, left - 1);
    return left > 0 ? res.writeHead(503).end('try later') : res.writeHead(204).end();
  }
  return res.writeHead(404).end();
}

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, raw: Buffer.concat(chunks).toString(), at: Date.now() });
      answer(req.url ?? '', res);
    });
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onData(stream, _session, callback) {
      let text = '';
      stream.on('data', (chunk: Buffer) => (text += chunk.toString()));
      stream.on('end', () => {
        mails.push(text);
        callback();
      });
    },
  });
  smtp.listen(0, '127.0.0.1');
  await once(smtp.server, 'listening');
  const smtpPort = (smtp.server.address() as AddressInfo).port;

  ({ context, app, ingest, owner, subdomain } = await startTestPlatform({
    WEBHOOK_ALLOWLIST: '127.0.0.1',
    WEBHOOK_RETRY_BASE_MS: '50',
    WEBHOOK_TIMEOUT_MS: '1000',
    SMTP_URL: `smtp://127.0.0.1:${smtpPort}`,
    RATE_LIMIT_REDIRECT: '1000000:60',
  }));
  worker = await startWorker(context);
  enricher = await startVisitConsumer(context);
});

afterAll(async () => {
  await enricher?.stop();
  await worker?.stop();
  await app?.close();
  if (context) await closeContext(context);
  receiver?.close();
  smtp?.close();
});

const createWebhook = async (payload: Record<string, unknown>, who: TestOwner = owner) => {
  const created = await app.inject({ method: 'POST', url: '/api/v1/webhooks', headers: who.auth, payload });
  expect(created.statusCode, created.body).toBe(201);
  return created.json().data as { id: string; secret: string; enabled: boolean; url: string };
};
const webhookOf = async (id: string) => (await app.inject({ method: 'GET', url: `/api/v1/webhooks/${id}`, headers: owner.auth })).json().data;
const deliveriesOf = async (id: string, query = '') =>
  (await app.inject({ method: 'GET', url: `/api/v1/webhooks/${id}/deliveries${query}`, headers: owner.auth })).json();
const arrivedAt = (path: string) => received.filter((entry) => entry.path === path);
const uniquePath = (prefix: string) => `${prefix}-${Math.random().toString(36).slice(2, 10)}`;
const createLink = async (slug?: string) => {
  const created = await app.inject({
    method: 'POST',
    url: '/api/v1/links',
    headers: owner.auth,
    payload: { subdomain, slug, target_url: 'https://example.com/landing' },
  });
  expect(created.statusCode, created.body).toBe(201);
  return created.json().data as { id: string; slug: string };
};

describe('webhook endpoints', () => {
  it('creates a webhook with its secret shown once, lists, reads, updates and deletes it', async () => {
    const created = await app.inject({
      method: 'POST',
      url: '/api/v1/webhooks',
      headers: owner.auth,
      payload: { url: `${base}/ok/crud`, events: ['visit.new', 'link.created', 'agent.task', 'link.target_down'], description: 'CRM' },
    });
    expect(created.statusCode).toBe(201);
    const webhook = created.json().data;
    expect(webhook).toMatchObject({ url: `${base}/ok/crud`, enabled: true, disabled_at: null, disabled_reason: null, subdomain: null, description: 'CRM' });
    expect(webhook.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(webhook.secret.startsWith(webhook.secret_prefix)).toBe(true);

    const listed = (await app.inject({ method: 'GET', url: '/api/v1/webhooks', headers: owner.auth })).json();
    const inList = listed.data.webhooks.find((entry: { id: string }) => entry.id === webhook.id);
    expect(inList).toBeDefined();
    expect(inList).not.toHaveProperty('secret');
    expect(await webhookOf(webhook.id)).not.toHaveProperty('secret');

    const patched = await app.inject({
      method: 'PATCH',
      url: `/api/v1/webhooks/${webhook.id}`,
      headers: owner.auth,
      payload: { events: ['visit.unique'], subdomain, description: null },
    });
    expect(patched.statusCode).toBe(200);
    expect(patched.json().data).toMatchObject({ events: ['visit.unique'], subdomain, description: null });

    const paused = await app.inject({ method: 'PATCH', url: `/api/v1/webhooks/${webhook.id}`, headers: owner.auth, payload: { enabled: false } });
    expect(paused.json().data).toMatchObject({ enabled: false, disabled_reason: 'disabled by its owner' });

    const deleted = await app.inject({ method: 'DELETE', url: `/api/v1/webhooks/${webhook.id}`, headers: owner.auth });
    expect(deleted.statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: `/api/v1/webhooks/${webhook.id}`, headers: owner.auth })).statusCode).toBe(404);
  });

  it('refuses bad input with the right codes, and guards the URL at creation', async () => {
    const post = (payload: Record<string, unknown>) => app.inject({ method: 'POST', url: '/api/v1/webhooks', headers: owner.auth, payload });
    const unknownEvent = await post({ url: `${base}/ok`, events: ['visit.new', 'visit.deleted'] });
    expect(unknownEvent.statusCode).toBe(422);
    expect(unknownEvent.json().error.code).toBe('validation_error');
    expect((await post({ url: `${base}/ok`, events: [] })).statusCode).toBe(422);
    expect((await post({ events: ['visit.new'] })).statusCode).toBe(400);
    // Not an http(s) URL of the documented pattern: 422; well formed but a destination the guard refuses: 403.
    for (const url of ['ftp://example.com/', 'http://user:pw@127.0.0.1/', 'http://xn--pypal-4ve.com/']) {
      const refused = await post({ url, events: ['visit.new'] });
      expect(refused.statusCode, url).toBe(422);
      expect(refused.json().error).toMatchObject({ code: 'validation_error', details: { url: expect.any(String) } });
    }
    for (const url of ['http://10.0.0.1/hook', 'http://169.254.169.254/latest/meta-data/', `http://127.0.0.1:22/`]) {
      const refused = await post({ url, events: ['visit.new'] });
      expect(refused.statusCode, url).toBe(403);
      expect(refused.json().error).toMatchObject({ code: 'forbidden', details: { reason: 'destination_not_allowed', url: expect.any(String) } });
    }
    const otherSubdomain = await post({ url: `${base}/ok`, events: ['visit.new'], subdomain: 'no-such-subdomain' });
    expect(otherSubdomain.statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: '/api/v1/webhooks/not-a-uuid', headers: owner.auth })).statusCode).toBe(422);
  });

  it("keeps owners apart: another account gets not_owner on someone else's webhook", async () => {
    const webhook = await createWebhook({ url: `${base}/ok/private`, events: ['visit.new'] });
    const stranger = await createOwner(context, app);
    for (const [method, url] of [
      ['GET', `/api/v1/webhooks/${webhook.id}`],
      ['DELETE', `/api/v1/webhooks/${webhook.id}`],
      ['POST', `/api/v1/webhooks/${webhook.id}/test`],
      ['POST', `/api/v1/webhooks/${webhook.id}/rotate-secret`],
      ['GET', `/api/v1/webhooks/${webhook.id}/deliveries`],
    ] as const) {
      const answer = await app.inject({ method, url, headers: stranger.auth });
      expect(answer.statusCode, `${method} ${url}`).toBe(403);
      expect(answer.json().error.code).toBe('not_owner');
    }
    const theirs = (await app.inject({ method: 'GET', url: '/api/v1/webhooks', headers: stranger.auth })).json().data.webhooks;
    expect(theirs).toEqual([]);
  });
});

describe('webhook deliveries', () => {
  it('sends webhook.test on request, signed, with every field of the body and headers', async () => {
    const path = uniquePath('/ok/test');
    const webhook = await createWebhook({ url: `${base}${path}`, events: ['link.created'] });
    const tested = await app.inject({ method: 'POST', url: `/api/v1/webhooks/${webhook.id}/test`, headers: owner.auth });
    expect(tested.statusCode, tested.body).toBe(200);
    // The receiver is internal (admitted by WEBHOOK_ALLOWLIST): its body is not shown.
    expect(tested.json().data).toMatchObject({ event: 'webhook.test', attempt: 1, status_code: 200, success: true, error: null, response_excerpt: null });

    const [delivery] = arrivedAt(path);
    expect(delivery).toBeDefined();
    const { headers, raw } = delivery!;
    expect(verifySignature(webhook.secret, raw, headers['x-svc-signature'] as string)).toBe(true);
    const body = verifyDelivery<{ ok: boolean; data: Record<string, unknown>; meta: Record<string, unknown> }>(
      webhook.secret,
      raw,
      headers['x-svc-signature'] as string,
    )!;
    expect(body).toBeDefined();
    expect(Object.keys(body)).toEqual(['ok', 'data', 'meta', 'event', 'delivered_at']);
    expect(body).toMatchObject({ ok: true, event: 'webhook.test', data: { webhook_id: webhook.id, url: webhook.url } });
    expect(body.meta).toMatchObject({ webhook_id: webhook.id, delivery_id: tested.json().data.delivery_id, attempt: 1, event_id: tested.json().data.event_id });
    expect(Date.now() - Date.parse(body.delivered_at)).toBeLessThan(60_000);
    expect(headers['x-svc-event']).toBe('webhook.test');
    expect(headers['x-svc-delivery']).toBe(tested.json().data.delivery_id);
    expect(headers['content-type']).toBe('application/json');
    expect(headers['user-agent']).toMatch(/^linktrack-webhooks\//);

    const log = await deliveriesOf(webhook.id);
    expect(log.data.deliveries).toHaveLength(1);
    expect(log.data.deliveries[0]).toMatchObject({ event: 'webhook.test', success: true, status_code: 200, response_excerpt: null });
  });

  // Guards issue 23's "internal responses readable by tenants": the receiver here (127.0.0.1) is
  // internal and admitted only by WEBHOOK_ALLOWLIST, so any tenant could read an internal service's
  // answers through the test button and the delivery log. Status and timing stay; the body does not.
  it('never shows a tenant the body of a receiver admitted only by WEBHOOK_ALLOWLIST, in the test answer or the delivery log', async () => {
    for (const [prefix, status] of [
      ['/ok/internal', 200],
      ['/fail/internal', 500],
    ] as const) {
      const webhook = await createWebhook({ url: `${base}${uniquePath(prefix)}`, events: ['link.created'] });
      const tested = await app.inject({ method: 'POST', url: `/api/v1/webhooks/${webhook.id}/test`, headers: owner.auth });
      expect(tested.statusCode, tested.body).toBe(200);
      expect(tested.json().data).toMatchObject({ status_code: status, success: status === 200, response_excerpt: null, latency_ms: expect.any(Number) });
      expect(tested.body).not.toMatch(/thanks|maintenance/);
      const log = await deliveriesOf(webhook.id);
      expect(log.data.deliveries[0]).toMatchObject({ status_code: status, response_excerpt: null, latency_ms: expect.any(Number) });
      expect(JSON.stringify(log)).not.toMatch(/thanks|maintenance/);
    }
    // Nor where it redirects to, nor its address in a connection error.
    const redirect = await createWebhook({ url: `${base}${uniquePath('/redirect')}`, events: ['link.created'] });
    const redirected = (await app.inject({ method: 'POST', url: `/api/v1/webhooks/${redirect.id}/test`, headers: owner.auth })).json().data;
    expect(redirected).toMatchObject({ status_code: 302, success: false, error: 'redirect 302 not followed', response_excerpt: null });
  });

  it('delivers link.created from the API to subscribed webhooks only, and the data is the link', async () => {
    const path = uniquePath('/ok/created');
    const otherPath = uniquePath('/ok/unsubscribed');
    const webhook = await createWebhook({ url: `${base}${path}`, events: ['link.created'] });
    await createWebhook({ url: `${base}${otherPath}`, events: ['visit.new'] });
    const link = await createLink();
    const [delivery] = await waitFor(() => arrivedAt(path).length > 0 && arrivedAt(path), DEADLINE_MS, { message: 'link.created delivery' });
    const body = verifyDelivery<{ data: { id: string; slug: string } }>(webhook.secret, delivery!.raw, delivery!.headers['x-svc-signature'] as string)!;
    expect(body.event).toBe('link.created');
    expect(body.data).toMatchObject({ id: link.id, slug: link.slug, subdomain });
    expect(arrivedAt(otherPath)).toEqual([]);
  });

  it('turns a redirect into a visit.new delivery through the pipeline (Kafka and BullMQ in the services run), filtered by subdomain', async () => {
    const path = uniquePath('/ok/visits');
    const elsewhere = uniquePath('/ok/elsewhere');
    const webhook = await createWebhook({ url: `${base}${path}`, events: ['visit.new'], subdomain });
    const other = await app.inject({
      method: 'POST',
      url: '/api/v1/subdomains',
      headers: owner.auth,
      payload: { name: `w${Math.random().toString(36).slice(2, 10)}` },
    });
    await createWebhook({ url: `${base}${elsewhere}`, events: ['visit.new'], subdomain: other.json().data.name });
    const link = await createLink();
    const redirected = await ingest.inject({
      method: 'GET',
      url: `/${link.slug}`,
      headers: { host: `${subdomain}.localhost:8080`, 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0' },
      remoteAddress: '203.0.113.77',
    });
    expect(redirected.statusCode).toBe(302);
    const [delivery] = await waitFor(() => arrivedAt(path).length > 0 && arrivedAt(path), DEADLINE_MS, { message: 'visit.new delivery' });
    const body = verifyDelivery<{ data: Record<string, unknown> }>(webhook.secret, delivery!.raw, delivery!.headers['x-svc-signature'] as string)!;
    expect(body.event).toBe('visit.new');
    expect(body.data).toMatchObject({ link_id: link.id, slug: link.slug, subdomain, kind: 'visit', ip_public: '203.0.113.77', browser: 'Firefox' });
    expect(arrivedAt(elsewhere)).toEqual([]);
    const log = await waitFor(async () => {
      const page = await deliveriesOf(webhook.id);
      return page.data.deliveries.length > 0 && page;
    }, DEADLINE_MS);
    expect(log.data.deliveries[0]).toMatchObject({ event: 'visit.new', success: true, attempt: 1 });
  });

  // Issue 23: attack probes were enqueued with no owner, so security.suspicious never reached one.
  it("turns an attack probe on a short host (GET /.env) into a security.suspicious delivery to the subdomain owner's webhook", async () => {
    const path = uniquePath('/ok/suspicious');
    const webhook = await createWebhook({ url: `${base}${path}`, events: ['security.suspicious'], subdomain });
    const probe = await ingest.inject({
      method: 'GET',
      url: '/.env',
      headers: { host: `${subdomain}.localhost:8080`, 'user-agent': 'probe/1.0' },
      remoteAddress: '203.0.113.66',
    });
    expect(probe.statusCode).toBe(404);
    const [delivery] = await waitFor(() => arrivedAt(path).length > 0 && arrivedAt(path), DEADLINE_MS, { message: 'security.suspicious delivery' });
    const body = verifyDelivery<{ data: Record<string, unknown> }>(webhook.secret, delivery!.raw, delivery!.headers['x-svc-signature'] as string)!;
    expect(body.event).toBe('security.suspicious');
    expect(body.data).toMatchObject({ reason: 'attack', kind: 'attack', subdomain, slug: '/.env', link_id: '', ip_public: '203.0.113.66' });
    expect(body.data.attack_type).toEqual(expect.any(String));
    expect(body.data.attack_type).not.toBe('');
    expect(delivery!.headers['x-svc-event']).toBe('security.suspicious');
  });

  it(
    'retries a failing receiver with growing gaps, then disables the webhook after the fifth failure and notifies the owner (dashboard and e-mail)',
    { timeout: 90_000 },
    async () => {
      const path = uniquePath('/fail');
      const webhook = await createWebhook({ url: `${base}${path}`, events: ['link.created'] });
      await createLink();
      await waitFor(async () => (await webhookOf(webhook.id)).enabled === false, DEADLINE_MS, { message: 'webhook disabled' });
      const attempts = arrivedAt(path);
      expect(attempts).toHaveLength(5);
      expect(attempts.map((entry) => Number(entry.headers['x-svc-attempt']))).toEqual([1, 2, 3, 4, 5]);
      expect(new Set(attempts.map((entry) => entry.headers['x-svc-delivery'])).size).toBe(1);
      const gaps = attempts.slice(1).map((entry, index) => entry.at - attempts[index]!.at);
      // Each wait is at least its schedule's (50·4^n ms, less 20 % jitter) and longer than the one before
      // (BullMQ adds its own scheduling delay, so no upper bound is asserted).
      gaps.forEach((gap, n) => expect(gap, `gaps ${gaps.join(', ')}`).toBeGreaterThanOrEqual(50 * 4 ** n * 0.8 - 5));
      for (let i = 1; i < gaps.length; i++) expect(gaps[i]!, `gaps ${gaps.join(', ')}`).toBeGreaterThan(gaps[i - 1]!);
      // Every attempt is its own signed body, with its own delivered_at.
      expect(new Set(attempts.map((entry) => JSON.parse(entry.raw).delivered_at)).size).toBe(5);

      const disabled = await webhookOf(webhook.id);
      expect(disabled).toMatchObject({ enabled: false, disabled_at: expect.any(String), disabled_reason: expect.stringContaining('5 attempts') });
      const log = await deliveriesOf(webhook.id);
      expect(log.data.deliveries.map((entry: { attempt: number }) => entry.attempt)).toEqual([5, 4, 3, 2, 1]);
      expect(log.data.deliveries[0]).toMatchObject({ success: false, status_code: 500, error: 'HTTP 500', response_excerpt: null });

      const notices = (await app.inject({ method: 'GET', url: '/api/v1/notifications', headers: owner.auth })).json().data.notifications;
      const notice = notices.find((entry: { data: { webhook_id: string } }) => entry.data.webhook_id === webhook.id);
      expect(notice).toMatchObject({ kind: 'webhook.disabled', read_at: null });
      await waitFor(() => mails.some((mail) => mail.includes(webhook.url) && mail.includes(owner.email)), 10_000, { message: 'notification e-mail' });
      const read = await app.inject({ method: 'POST', url: `/api/v1/notifications/${notice.id}/read`, headers: owner.auth });
      expect(read.json().data.read_at).toEqual(expect.any(String));

      // Enabled again: the next event is delivered afresh.
      const enabled = await app.inject({ method: 'POST', url: `/api/v1/webhooks/${webhook.id}/enable`, headers: owner.auth });
      expect(enabled.json().data).toMatchObject({ enabled: true, disabled_at: null, disabled_reason: null });
    },
  );

  it('disables a webhook at once when the receiver answers 410 Gone', async () => {
    const path = uniquePath('/gone');
    const webhook = await createWebhook({ url: `${base}${path}`, events: ['link.created'] });
    await createLink();
    await waitFor(async () => (await webhookOf(webhook.id)).enabled === false, DEADLINE_MS, { message: 'webhook disabled by 410' });
    expect(arrivedAt(path)).toHaveLength(1);
    expect((await webhookOf(webhook.id)).disabled_reason).toContain('410');
  });

  it('recovers: a receiver that fails twice gets the delivery on the third attempt', async () => {
    const path = uniquePath('/flaky');
    const webhook = await createWebhook({ url: `${base}${path}`, events: ['link.created'] });
    await createLink();
    await waitFor(() => arrivedAt(path).length === 3, DEADLINE_MS, { message: 'third attempt' });
    const log = await waitFor(async () => {
      const page = await deliveriesOf(webhook.id);
      return page.data.deliveries.length === 3 && page;
    }, DEADLINE_MS);
    expect(log.data.deliveries.map((entry: { success: boolean; status_code: number }) => [entry.success, entry.status_code])).toEqual([
      [true, 204],
      [false, 503],
      [false, 503],
    ]);
    expect((await webhookOf(webhook.id)).enabled).toBe(true);
  });

  it('does not follow a redirect (to loopback here): the attempt fails', async () => {
    const path = uniquePath('/redirect');
    const webhook = await createWebhook({ url: `${base}${path}`, events: ['link.created'] });
    const tested = (await app.inject({ method: 'POST', url: `/api/v1/webhooks/${webhook.id}/test`, headers: owner.auth })).json().data;
    expect(tested).toMatchObject({ success: false, status_code: 302, error: expect.stringContaining('redirect 302 not followed') });
    expect(arrivedAt('/loopback-target')).toEqual([]);
  });

  it('bounds an attempt by the timeout and a response by its size', async () => {
    const slow = await createWebhook({ url: `${base}${uniquePath('/slow')}`, events: ['link.created'] });
    const timedOut = (await app.inject({ method: 'POST', url: `/api/v1/webhooks/${slow.id}/test`, headers: owner.auth })).json().data;
    expect(timedOut).toMatchObject({ success: false, status_code: null, error: 'timed out after 1000 ms' });
    expect(timedOut.latency_ms).toBeGreaterThanOrEqual(950);
    const huge = await createWebhook({ url: `${base}${uniquePath('/huge')}`, events: ['link.created'] });
    const big = (await app.inject({ method: 'POST', url: `/api/v1/webhooks/${huge.id}/test`, headers: owner.auth })).json().data;
    // The excerpt's length is tested in shared/webhooks/send.int.test.ts (this receiver is internal: none is kept).
    expect(big).toMatchObject({ success: true, status_code: 200, response_excerpt: null });
  });

  it('logs an attempt the guard refuses at delivery time (the URL became internal) as a failure', async () => {
    const webhook = await createWebhook({ url: `${base}/ok/guarded`, events: ['link.created'] });
    // As if the name now resolved elsewhere: the stored URL is changed behind the API's back.
    await context.db.db.updateTable('webhooks').set({ url: 'http://10.20.30.40/hook' }).where('id', '=', webhook.id).execute();
    const tested = (await app.inject({ method: 'POST', url: `/api/v1/webhooks/${webhook.id}/test`, headers: owner.auth })).json().data;
    expect(tested).toMatchObject({ success: false, status_code: null, error: expect.stringContaining('refused by the SSRF guard') });
    expect((await deliveriesOf(webhook.id)).data.deliveries[0]).toMatchObject({ success: false, error: expect.stringContaining('10.20.30.40') });
  });

  it('rotates the secret: later deliveries are signed with the new one only', async () => {
    const path = uniquePath('/ok/rotate');
    const webhook = await createWebhook({ url: `${base}${path}`, events: ['link.created'] });
    const rotated = await app.inject({ method: 'POST', url: `/api/v1/webhooks/${webhook.id}/rotate-secret`, headers: owner.auth });
    expect(rotated.statusCode).toBe(200);
    const { secret } = rotated.json().data;
    expect(secret).not.toBe(webhook.secret);
    await app.inject({ method: 'POST', url: `/api/v1/webhooks/${webhook.id}/test`, headers: owner.auth });
    await createLink();
    const deliveries = await waitFor(() => arrivedAt(path).length === 2 && arrivedAt(path), DEADLINE_MS, { message: 'two deliveries' });
    for (const { raw, headers } of deliveries) {
      expect(verifySignature(secret, raw, headers['x-svc-signature'] as string)).toBe(true);
      expect(verifySignature(webhook.secret, raw, headers['x-svc-signature'] as string)).toBe(false);
    }
  });

  it('pages the delivery log with cursors and page numbers', async () => {
    const webhook = await createWebhook({ url: `${base}${uniquePath('/ok/log')}`, events: ['link.created'] });
    for (let i = 0; i < 5; i++) await app.inject({ method: 'POST', url: `/api/v1/webhooks/${webhook.id}/test`, headers: owner.auth });
    const seen: string[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await deliveriesOf(webhook.id, `?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.meta).toMatchObject({ total: 5, limit: 2 });
      seen.push(...page.data.deliveries.map((entry: { id: string }) => entry.id));
      if (!page.meta.has_more) break;
      cursor = page.meta.next_cursor;
    }
    expect(seen).toHaveLength(5);
    expect(new Set(seen).size).toBe(5);
    expect([...seen].sort((a, b) => Number(b) - Number(a))).toEqual(seen);
    const third = await deliveriesOf(webhook.id, '?limit=2&page=3');
    expect(third.data.deliveries.map((entry: { id: string }) => entry.id)).toEqual([seen[4]]);
    expect((await deliveriesOf(webhook.id, '?cursor=bogus')).ok).toBe(false);
  });
});

describe('notifications', () => {
  it('filters the unread ones with ?unread=true, counts them in meta.unread whatever the filter, and marks them read one by one or all at once', async () => {
    const reader = await createOwner(context, app);
    const stranger = await createOwner(context, app);
    const store = webhooksRepository(context.db.db);
    const notify = (who: TestOwner, title: string) =>
      store.insertNotification({ user_id: who.id, kind: 'webhook.disabled', title, body: 'a body', data: { webhook_id: randomUUID() } });
    const first = await notify(reader, 'first');
    await notify(reader, 'second');
    await notify(reader, 'third');
    await notify(stranger, 'not yours');
    const list = async (query = '') => (await app.inject({ method: 'GET', url: `/api/v1/notifications${query}`, headers: reader.auth })).json();

    const all = await list();
    expect(all.data.notifications.map((entry: { title: string }) => entry.title)).toEqual(['third', 'second', 'first']);
    expect(all.meta).toMatchObject({ total: 3, unread: 3 });

    const read = await app.inject({ method: 'POST', url: `/api/v1/notifications/${first.id}/read`, headers: reader.auth });
    expect(read.statusCode).toBe(200);
    const unread = await list('?unread=true');
    expect(unread.data.notifications.map((entry: { title: string }) => entry.title)).toEqual(['third', 'second']);
    expect(unread.meta).toMatchObject({ total: 2, unread: 2 });
    // meta.unread counts all unread ones, whatever the filter and the page size.
    expect((await list('?limit=1')).meta).toMatchObject({ count: 1, total: 3, unread: 2, has_more: true });
    expect((await list('?unread=false')).meta).toMatchObject({ total: 3, unread: 2 });
    // Another account's notification cannot be marked by this one.
    const strangers = (await app.inject({ method: 'GET', url: '/api/v1/notifications', headers: stranger.auth })).json().data.notifications;
    expect((await app.inject({ method: 'POST', url: `/api/v1/notifications/${strangers[0].id}/read`, headers: reader.auth })).statusCode).toBe(404);

    const marked = await app.inject({ method: 'POST', url: '/api/v1/notifications/read-all', headers: reader.auth });
    expect(marked.statusCode, marked.body).toBe(200);
    expect(marked.json().data).toEqual({ marked: 2 });
    expect((await list('?unread=true')).data.notifications).toEqual([]);
    expect((await list()).meta).toMatchObject({ total: 3, unread: 0 });
    expect((await app.inject({ method: 'POST', url: '/api/v1/notifications/read-all', headers: reader.auth })).json().data).toEqual({ marked: 0 });
    // Only the caller's own were marked.
    expect((await app.inject({ method: 'GET', url: '/api/v1/notifications', headers: stranger.auth })).json().meta.unread).toBe(1);
    expect((await app.inject({ method: 'POST', url: '/api/v1/notifications/read-all' })).statusCode).toBe(401);
  });
});
