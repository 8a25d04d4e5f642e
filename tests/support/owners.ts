import type { FastifyInstance } from 'fastify';
import type { EventType } from '#shared/events/events.js';
import { WEBHOOKS_VERSION_KEY } from '#shared/webhooks/delivery.js';
import { insertWebhook } from './webhooks.js';
import type { Context } from '#shared/context.js';
import { createAccount, loginCookie, mintToken, TEST_PASSWORD } from './accounts.js';

/** An account signed in over HTTP, with a bearer token holding every scope of a user. */
export interface TestOwner {
  id: string;
  email: string;
  cookie: string;
  token: string;
  /** `{ authorization: 'Bearer …' }` */
  auth: { authorization: string };
}

let addressCounter = 0;

/** Creates an account, logs it in and mints a token with links:read, links:write, stats:read and subdomain:write. */
export async function createOwner(context: Context, app: FastifyInstance, role: 'staff' | 'user' = 'user'): Promise<TestOwner> {
  const account = await createAccount(context, role);
  // A fresh documentation address per login keeps the auth bucket of one address from filling up.
  addressCounter = (addressCounter % 250) + 1;
  const cookie = await loginCookie(app, account.email, TEST_PASSWORD, `198.51.100.${addressCounter}`);
  const origin = new URL(context.config.publicUrl).origin;
  const { token } = await mintToken(app, cookie, origin);
  return { ...account, cookie, token, auth: { authorization: `Bearer ${token}` } };
}

/** Claims a subdomain with a unique name for the owner and returns its name. */
export async function claimSubdomain(app: FastifyInstance, owner: TestOwner, policy: Record<string, unknown> = {}): Promise<string> {
  const name = `s${Math.random().toString(36).slice(2, 12)}`;
  const claimed = await app.inject({ method: 'POST', url: '/api/v1/subdomains', headers: owner.auth, payload: { name } });
  if (claimed.statusCode !== 201) throw new Error(`claim failed: ${claimed.statusCode} ${claimed.body}`);
  if (Object.keys(policy).length > 0) {
    const patched = await app.inject({ method: 'PATCH', url: `/api/v1/subdomains/${name}`, headers: owner.auth, payload: policy });
    if (patched.statusCode !== 200) throw new Error(`policy failed: ${patched.statusCode} ${patched.body}`);
  }
  return name;
}

/** Creates a link over the API (its body as `POST /api/v1/links` takes it) and returns the stored link. */
export async function createLink(
  app: FastifyInstance,
  owner: TestOwner,
  link: Record<string, unknown>,
): Promise<{ id: string; slug: string } & Record<string, unknown>> {
  const created = await app.inject({ method: 'POST', url: '/api/v1/links', headers: owner.auth, payload: link });
  if (created.statusCode !== 201) throw new Error(`link not created: ${created.statusCode} ${created.body}`);
  return created.json().data;
}

/**
 * Subscribes the owner to visit events with a webhook stored directly (the enricher raises visit
 * events only for owners with a subscribed webhook). Its receiver is never called: the tests that
 * use it read the `events` topic and run no webhook dispatcher.
 */
export async function subscribeToVisitEvents(
  context: Context,
  ownerId: string,
  events: EventType[] = ['visit.new', 'visit.unique', 'security.suspicious'],
): Promise<void> {
  await insertWebhook(context, { owner_id: ownerId, url: 'https://receiver.example/hooks', events, description: 'test subscription (never delivered)' });
  await context.cache.bump(WEBHOOKS_VERSION_KEY);
}
