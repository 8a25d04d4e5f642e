import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '../../../shared/context.js';
import { createAccount, loginCookie } from '../../../shared/testing/accounts.js';
import { closeContext, createTestContext } from '../../../shared/testing/context.js';
import { buildApp } from '../app.js';

// The accounts list staff see in the dashboard's staff page (GET /api/v1/users), on a real store.
let context: Context;
let app: FastifyInstance;
let origin: string;

beforeAll(async () => {
  context = await createTestContext();
  app = (await buildApp(context)).app;
  origin = new URL(context.config.publicUrl).origin;
});

afterAll(async () => {
  await app?.close();
  await closeContext(context);
});

const clientIp = () => `198.51.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;

describe('GET /api/v1/users', () => {
  it('lists every account newest first for staff, without password hashes, paged by cursor and by number', async () => {
    const staff = await createAccount(context, 'staff');
    const cookie = await loginCookie(app, staff.email, undefined, clientIp());
    const created: string[] = [];
    for (let i = 0; i < 3; i++) {
      const answer = await app.inject({ method: 'POST', url: '/api/v1/users', headers: { cookie, origin }, payload: { email: `listed-${i}-${Date.now()}@example.test`, password: 'a long enough password', display_name: `Listed ${i}` } });
      expect(answer.statusCode, answer.body).toBe(201);
      created.push(answer.json().data.id);
    }
    const list = async (query = '') => (await app.inject({ method: 'GET', url: `/api/v1/users${query}`, headers: { cookie } })).json();

    const first = await list();
    const total = first.meta.total;
    expect(total).toBeGreaterThanOrEqual(4);
    expect(first.data.users.slice(0, 3).map((user: { id: string }) => user.id)).toEqual([...created].reverse());
    expect(first.data.users[0]).toEqual({ id: created[2], email: expect.stringContaining('listed-2-'), role: 'user', display_name: 'Listed 2', created_at: expect.any(String) });
    expect(JSON.stringify(first)).not.toMatch(/password|scrypt/);

    // A cursor walk sees every account once, in the same order as one big page.
    const walked: string[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await list(`?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.meta).toMatchObject({ limit: 2, total });
      walked.push(...page.data.users.map((user: { id: string }) => user.id));
      if (!page.meta.has_more) break;
      cursor = page.meta.next_cursor;
    }
    expect(walked).toEqual(first.data.users.map((user: { id: string }) => user.id));
    expect((await list('?limit=1&page=2')).data.users.map((user: { id: string }) => user.id)).toEqual([created[1]]);
    const bogus = await app.inject({ method: 'GET', url: '/api/v1/users?cursor=bm9wZQ', headers: { cookie } });
    expect(bogus.statusCode).toBe(422);
    expect(bogus.json().error.details).toMatchObject({ cursor: expect.any(String) });
  });

  it('refuses users (403 missing admin scope) and anonymous callers (401)', async () => {
    const user = await createAccount(context);
    const cookie = await loginCookie(app, user.email, undefined, clientIp());
    const refused = await app.inject({ method: 'GET', url: '/api/v1/users', headers: { cookie } });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.details).toMatchObject({ reason: 'missing_scope', required_scope: 'admin' });
    expect((await app.inject({ method: 'GET', url: '/api/v1/users' })).statusCode).toBe(401);
  });
});
