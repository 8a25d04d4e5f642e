import type { FastifyInstance } from 'fastify';
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { migrateDatabase } from '#shared/migrations/postgres.js';
import { SecretsError, createSecretBox, keyId, type SecretBox } from '#shared/secrets/secret-box.js';
import { createAccount } from '#tests/support/accounts.js';
import { closeContext } from '#tests/support/context.js';
import { createFreshDatabase, type FreshDatabase } from '#tests/support/fresh-database.js';
import type { TestOwner } from '#tests/support/owners.js';
import { startTestPlatform } from '#tests/support/platform.js';
import { waitFor } from '#tests/support/wait.js';
import { insertWebhook } from '#tests/support/webhooks.js';
import type { Consumer } from '#shared/message-log/message-log.js';
import { createDeliverer, type DeliverableEvent } from '#shared/webhooks/delivery.js';
import { webhooksRepository } from '#shared/webhooks/webhooks.repository.js';
import { sealWebhookSecrets } from '#shared/webhooks/secrets.js';
import { verifyDelivery } from '#shared/webhooks/signature.js';
import { startWorker } from '#services/worker/worker.js';

// Webhook signing secrets at rest: sealed with SECRETS_KEY (AES-256-GCM) in `webhooks.secret`,
// opened only to sign. Before this, the column held the secret in plaintext: every test here
// failed on that code. The start-time sealing and the key rotations run on a database of their
// own: they re-encrypt every row they meet, which other test files (services run) must not see.
const DEADLINE_MS = 30_000;

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  raw: string;
}

let context: Context;
let app: FastifyInstance;
let owner: TestOwner;
let subdomain: string;
let worker: Consumer;
let receiver: Server;
let base: string;
const received: Received[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, raw: Buffer.concat(chunks).toString() });
      res.writeHead(200).end('thanks');
    });
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  ({ context, app, owner, subdomain } = await startTestPlatform({ WEBHOOK_ALLOWLIST: '127.0.0.1' }));
  worker = await startWorker(context);
});

afterAll(async () => {
  await worker?.stop();
  await app?.close();
  if (context) await closeContext(context);
  receiver?.close();
});

const uniquePath = (prefix: string) => `${prefix}-${Math.random().toString(36).slice(2, 10)}`;
const arrivedAt = (path: string) => received.filter((entry) => entry.path === path);
const verifies = (secret: string, entry: Received) => verifyDelivery(secret, entry.raw, entry.headers['x-svc-signature'] as string) !== undefined;
/** The webhook's row as Postgres holds it, every column as text. */
const storedRow = async (database: Context['db'], id: string) =>
  (
    await sql<{
      row: string;
      secret: string;
      secret_prefix: string;
    }>`SELECT row_to_json(w)::text AS row, secret, secret_prefix FROM webhooks w WHERE id = ${id}`.execute(database.db)
  ).rows[0]!;

/** The part of a secret that is random (after `whsec_`): no run of 8 of its characters may be in the row. */
const expectNoTraceOf = (row: string, secret: string) => {
  expect(row).not.toContain(secret);
  const random = secret.slice('whsec_'.length);
  for (let start = 0; start + 8 <= random.length; start += 4) expect(row).not.toContain(random.slice(start, start + 8));
};

describe('webhook secrets at rest', () => {
  it('the stored column never holds the plaintext secret, at creation or at rotation (the row read with SQL)', async () => {
    const created = await app.inject({
      method: 'POST',
      url: '/api/v1/webhooks',
      headers: owner.auth,
      payload: { url: `${base}/ok`, events: ['link.created'] },
    });
    expect(created.statusCode, created.body).toBe(201);
    const { id, secret, secret_prefix } = created.json().data as { id: string; secret: string; secret_prefix: string };
    expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(secret_prefix).toBe(secret.slice(0, 12));

    const stored = await storedRow(context.db, id);
    expectNoTraceOf(stored.row, secret);
    expect(stored.secret).toMatch(new RegExp(`^v1:${context.secrets.currentKeyId}:`));
    expect(stored.secret_prefix).toBe(secret.slice(0, 12));

    const rotated = await app.inject({ method: 'POST', url: `/api/v1/webhooks/${id}/rotate-secret`, headers: owner.auth });
    expect(rotated.statusCode, rotated.body).toBe(200);
    const fresh = rotated.json().data.secret as string;
    const after = await storedRow(context.db, id);
    expectNoTraceOf(after.row, fresh);
    expectNoTraceOf(after.row, secret);
    expect(after.secret).not.toBe(stored.secret);
    expect(after.secret_prefix).toBe(fresh.slice(0, 12));
    // The API never shows the stored form either.
    const read = await app.inject({ method: 'GET', url: `/api/v1/webhooks/${id}`, headers: owner.auth });
    expect(read.body).not.toContain(after.secret);
    expect(read.json().data.secret_prefix).toBe(fresh.slice(0, 12));
  });

  it('a delivery verifies with the secret shown at creation: the test button, and an event through the worker', async () => {
    const path = uniquePath('/ok/shown');
    const created = await app.inject({
      method: 'POST',
      url: '/api/v1/webhooks',
      headers: owner.auth,
      payload: { url: `${base}${path}`, events: ['link.created'], subdomain },
    });
    expect(created.statusCode, created.body).toBe(201);
    const { id, secret } = created.json().data as { id: string; secret: string };
    const tested = await app.inject({ method: 'POST', url: `/api/v1/webhooks/${id}/test`, headers: owner.auth });
    expect(tested.json().data).toMatchObject({ success: true, status_code: 200 });
    const link = await app.inject({
      method: 'POST',
      url: '/api/v1/links',
      headers: owner.auth,
      payload: { subdomain, target_url: 'https://example.com/sealed' },
    });
    expect(link.statusCode, link.body).toBe(201);
    const deliveries = await waitFor(() => arrivedAt(path).length === 2 && arrivedAt(path), DEADLINE_MS, { message: 'the test and the link.created delivery' });
    expect(deliveries.map((entry) => entry.headers['x-svc-event']).sort()).toEqual(['link.created', 'webhook.test']);
    for (const entry of deliveries) expect(verifies(secret, entry)).toBe(true);
  });
});

describe('sealing at start and rotating the key (a database of their own)', () => {
  let fresh: FreshDatabase;
  const keyA = randomBytes(32);
  const keyB = randomBytes(32);
  /** The context as a process configured with these keys sees it, on the fresh database. */
  const as = (box: SecretBox): Context => ({ ...context, db: fresh.database, secrets: box });
  /** A deliverer as such a process builds it, logging its attempts on the fresh database. */
  const delivererAs = (box: SecretBox) => createDeliverer({ ...as(box), webhooks: webhooksRepository(fresh.database.db) });
  const event = (): DeliverableEvent => ({ id: randomUUID(), type: 'webhook.test', occurred_at: new Date().toISOString(), subdomain: null, data: { n: 1 } });
  /** One attempt as a process with `box` makes it (the worker's and the test button's path); the delivery that arrived. */
  const deliverWith = async (box: SecretBox, row: { id: string; url: string; secret: string }) => {
    const outcome = await delivererAs(box).attempt(row, event(), randomUUID(), 1);
    expect(outcome.success, outcome.error ?? '').toBe(true);
    return arrivedAt(new URL(row.url).pathname).at(-1)!;
  };
  const rowOf = async (id: string) => (await webhooksRepository(fresh.database.db).findById(id))!;

  beforeAll(async () => {
    fresh = await createFreshDatabase();
    await migrateDatabase(fresh.database);
  });

  afterAll(async () => {
    await fresh?.drop();
  });

  it('plaintext secrets from before encryption are sealed at start, once, and deliveries still verify with them', async () => {
    const box = createSecretBox(keyA);
    const account = await createAccount(as(box));
    // A row as 0007 left it: the secret in plaintext (0008 copied its prefix).
    const id = randomUUID();
    const secret = `whsec_${randomBytes(32).toString('base64url')}`;
    const url = `${base}${uniquePath('/ok/legacy')}`;
    await fresh.database.db
      .insertInto('webhooks')
      .values({ id, owner_id: account.id, url, events: ['link.created'], secret, secret_prefix: secret.slice(0, 12) })
      .execute();
    // Never signed with the plaintext as it is: refused until sealed.
    await expect(delivererAs(box).attempt({ id, url, secret }, event(), randomUUID(), 1)).rejects.toThrow(/is not sealed/);

    const log = context.log;
    expect(await sealWebhookSecrets({ webhooks: webhooksRepository(fresh.database.db) }, box, log)).toEqual({ sealed: 1, failed: 0 });
    const stored = await storedRow(fresh.database, id);
    expectNoTraceOf(stored.row, secret);
    expect(box.keyIdOf(stored.secret)).toBe(keyId(keyA));
    // Idempotent: the next start finds nothing to do and leaves the row as it is.
    expect(await sealWebhookSecrets({ webhooks: webhooksRepository(fresh.database.db) }, box, log)).toEqual({ sealed: 0, failed: 0 });
    expect((await storedRow(fresh.database, id)).secret).toBe(stored.secret);

    expect(verifies(secret, await deliverWith(box, await rowOf(id)))).toBe(true);
  });

  it('rotation: SECRETS_KEY new and SECRETS_KEY_PREVIOUS old, the start re-encrypts under the new key; deliveries verify with the secrets first shown; then the old key can go', async () => {
    const oldBox = createSecretBox(keyA);
    const account = await createAccount(as(oldBox));
    const hooks = await Promise.all(
      [1, 2, 3].map(() => insertWebhook(as(oldBox), { owner_id: account.id, url: `${base}${uniquePath('/ok/rotation')}`, events: ['link.created'] })),
    );
    const rotating = createSecretBox(keyB, [keyA]);
    // Before the restart's re-encryption, the new configuration opens the old rows already.
    expect(verifies(hooks[0]!.secret, await deliverWith(rotating, await rowOf(hooks[0]!.row.id)))).toBe(true);

    const report = await sealWebhookSecrets({ webhooks: webhooksRepository(fresh.database.db) }, rotating, context.log);
    expect(report.failed).toBe(0);
    expect(report.sealed).toBeGreaterThanOrEqual(3); // and the earlier test's row
    for (const { row, secret } of hooks) {
      const stored = await storedRow(fresh.database, row.id);
      expect(rotating.keyIdOf(stored.secret)).toBe(keyId(keyB));
      expectNoTraceOf(stored.row, secret);
    }

    // The old key dropped (SECRETS_KEY_PREVIOUS emptied, restart): every secret opens, nothing is left to do.
    const rotated = createSecretBox(keyB);
    expect(await sealWebhookSecrets({ webhooks: webhooksRepository(fresh.database.db) }, rotated, context.log)).toEqual({ sealed: 0, failed: 0 });
    for (const { row, secret } of hooks) expect(verifies(secret, await deliverWith(rotated, await rowOf(row.id)))).toBe(true);
  });

  it('a wrong key gives a clear error, not garbage: nothing is sent or logged, and the start leaves the row as it is and reports it', async () => {
    const right = createSecretBox(keyA);
    const account = await createAccount(as(right));
    const path = uniquePath('/ok/wrong-key');
    const { row } = await insertWebhook(as(right), { owner_id: account.id, url: `${base}${path}`, events: ['link.created'] });
    const wrong = createSecretBox(randomBytes(32));

    const attempt = delivererAs(wrong).attempt(await rowOf(row.id), event(), randomUUID(), 1);
    await expect(attempt).rejects.toThrow(SecretsError);
    await expect(attempt).rejects.toThrow(
      `the stored value of webhook:${row.id} was sealed with key ${keyId(keyA)}, which this process does not have (SECRETS_KEY is key ${wrong.currentKeyId}): add the key it was sealed with to SECRETS_KEY_PREVIOUS`,
    );
    expect(arrivedAt(path)).toEqual([]);
    expect(await webhooksRepository(fresh.database.db).countAttempts(row.id)).toBe(0);

    const before = (await storedRow(fresh.database, row.id)).secret;
    const report = await sealWebhookSecrets({ webhooks: webhooksRepository(fresh.database.db) }, wrong, context.log);
    expect(report.failed).toBeGreaterThanOrEqual(1);
    expect((await storedRow(fresh.database, row.id)).secret).toBe(before);
  });

  it('a rotation through the API while a start re-encrypts wins: a row is replaced only if it still holds what was read', async () => {
    const box = createSecretBox(keyA);
    const account = await createAccount(as(box));
    const { row } = await insertWebhook(as(box), { owner_id: account.id, url: `${base}/ok`, events: ['link.created'] });
    const repository = webhooksRepository(fresh.database.db);
    expect(await repository.replaceSecret(row.id, 'v1:stale', box.seal('whsec_other', `webhook:${row.id}`))).toBe(false);
    expect((await rowOf(row.id)).secret).toBe(row.secret);
  });
});
