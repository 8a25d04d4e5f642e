import type { FastifyInstance } from 'fastify';
import type { Context } from '#shared/context.js';
import { hashPassword } from '#shared/password.js';
import { uniqueName } from './context.js';
import { usersRepository } from '#shared/users/users.repository.js';

export const TEST_PASSWORD = 'correct horse battery staple';

/** Creates an account with a unique e-mail straight in the store (no HTTP), returning its id and e-mail. */
export async function createAccount(context: Context, role: 'staff' | 'user' = 'user'): Promise<{ id: string; email: string }> {
  const email = `${uniqueName(role)}@example.test`;
  const id = await usersRepository(context.db.db).insertIfAbsent({ email, passwordHash: await hashPassword(TEST_PASSWORD), role });
  return { id: id!, email };
}

/** Logs in through POST /auth/login and returns the session cookie header value. */
export async function loginCookie(app: FastifyInstance, email: string, password = TEST_PASSWORD, ip = '198.51.100.1'): Promise<string> {
  const response = await app.inject({ method: 'POST', url: '/auth/login', payload: { email, password }, remoteAddress: ip });
  if (response.statusCode !== 200) throw new Error(`login failed: ${response.statusCode} ${response.body}`);
  const cookie = response.cookies.find((entry) => entry.name === 'lt_session');
  return `lt_session=${cookie!.value}`;
}

/** Creates a token through the API with the given session cookie (same-origin) and returns the secret and id. */
export async function mintToken(
  app: FastifyInstance,
  cookie: string,
  origin: string,
  body: Record<string, unknown> = { name: 'test', scopes: ['links:read', 'links:write', 'stats:read', 'subdomain:write'] },
): Promise<{ token: string; id: string }> {
  const response = await app.inject({ method: 'POST', url: '/api/v1/tokens', headers: { cookie, origin }, payload: body });
  if (response.statusCode !== 201) throw new Error(`token creation failed: ${response.statusCode} ${response.body}`);
  const { data } = response.json();
  return { token: data.token, id: data.id };
}
