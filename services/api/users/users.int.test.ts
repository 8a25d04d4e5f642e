import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { createAccount, loginCookie } from '#tests/support/accounts.js';
import { closeContext, createTestContext } from '#tests/support/context.js';
import { waitFor } from '#tests/support/wait.js';
import { buildApp } from '#services/app.js';

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
      const answer = await app.inject({
        method: 'POST',
        url: '/api/v1/users',
        headers: { cookie, origin },
        payload: { email: `listed-${i}-${Date.now()}@example.test`, password: 'a long enough password', display_name: `Listed ${i}` },
      });
      expect(answer.statusCode, answer.body).toBe(201);
      created.push(answer.json().data.id);
    }
    const list = async (query = '') => (await app.inject({ method: 'GET', url: `/api/v1/users${query}`, headers: { cookie } })).json();

    // The services run shares one database between test files, which create accounts meanwhile: the
    // checks hold whatever others add (never a duplicate, ours in order, newest first).
    const first = await list();
    const total = first.meta.total;
    expect(total).toBeGreaterThanOrEqual(4);
    const ours = (users: { id: string }[]) => users.map((user) => user.id).filter((id) => created.includes(id));
    expect(ours(first.data.users)).toEqual([...created].reverse());
    expect(first.data.users.find((user: { id: string }) => user.id === created[2])).toEqual({
      id: created[2],
      email: expect.stringContaining('listed-2-'),
      role: 'user',
      display_name: 'Listed 2',
      created_at: expect.any(String),
      disabled: false,
      disabled_at: null,
    });
    expect(JSON.stringify(first)).not.toMatch(/password|scrypt/);

    // A cursor walk sees every account that existed when it started, once each, newest first.
    const walked: { id: string; created_at: string }[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await list(`?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.meta.limit).toBe(2);
      walked.push(...page.data.users);
      if (!page.meta.has_more) break;
      cursor = page.meta.next_cursor;
    }
    expect(new Set(walked.map((user) => user.id)).size).toBe(walked.length);
    expect(walked.length).toBeGreaterThanOrEqual(total);
    expect(ours(walked)).toEqual([...created].reverse());
    for (let index = 1; index < walked.length; index++)
      expect(Date.parse(walked[index - 1]!.created_at)).toBeGreaterThanOrEqual(Date.parse(walked[index]!.created_at));
    // Page numbers address the same order: page 2 of one-account pages is the second of a two-account page.
    await waitFor(
      async () => {
        const [two, second] = await Promise.all([list('?limit=2'), list('?limit=1&page=2')]);
        return two.data.users[1]?.id !== undefined && two.data.users[1].id === second.data.users[0]?.id;
      },
      10_000,
      { message: 'page 2 of one-account pages matches', intervalMs: 50 },
    );
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
