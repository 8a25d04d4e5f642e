import { z } from 'zod';
import type { Context } from '../../../shared/context.js';
import { AppError } from '../../../shared/errors.js';
import { collectionMeta, PAGINATION_NOTE, pagingQuery } from '../../../shared/http/pagination.js';
import { defineRoute, type RouteDef } from '../../../shared/http/route.js';
import { hashPassword } from '../../../shared/password.js';
import { usersRepository } from './users.repository.js';
import { toUserView } from './users.view.js';

export const UserSchema = z
  .object({
    id: z.uuid(),
    email: z.string(),
    role: z.enum(['staff', 'user']),
    display_name: z.string().nullable(),
    created_at: z.iso.datetime(),
  })
  .meta({ id: 'User' });

/** A users cursor is opaque: a version tag and the id of the last account of the previous page. */
const encodeCursor = (id: string) => Buffer.from(`u1:${id}`).toString('base64url');
const UUID = /^u1:([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

/** Accounts: staff create users (so that tests and scripts can set up several owners) and list them. */
export function usersRoutes(context: Context): RouteDef[] {
  const users = usersRepository(context.db.db);
  return [
    defineRoute({
      operationId: 'listUsers',
      method: 'GET',
      path: '/api/v1/users',
      summary: 'List the accounts, newest first (staff only: a staff session, or a token with the admin scope)',
      description: PAGINATION_NOTE,
      tags: ['users'],
      auth: { kind: 'scope', scope: 'admin' },
      bucket: 'api',
      query: z.object(pagingQuery),
      response: z.object({ users: z.array(UserSchema) }),
      handler: async ({ query, respond }) => {
        let afterId: string | undefined;
        if (query.cursor !== undefined && query.page === undefined) {
          afterId = UUID.exec(Buffer.from(query.cursor, 'base64url').toString())?.[1];
          if (!afterId || !(await users.findById(afterId))) throw new AppError('validation_error', { cursor: 'is not a cursor this API issued' });
        }
        const at = query.page !== undefined ? { offset: (query.page - 1) * query.limit } : { afterId };
        const [rows, total] = await Promise.all([users.listPage(query.limit + 1, at), users.count()]);
        const page = rows.slice(0, query.limit);
        const next = rows.length > query.limit ? encodeCursor(page.at(-1)!.id) : null;
        respond.meta(collectionMeta(page.length, total, query, next));
        return { users: page.map(toUserView) };
      },
    }),
    defineRoute({
      operationId: 'createUser',
      method: 'POST',
      path: '/api/v1/users',
      summary: 'Create an account (staff only: a staff session, or a token with the admin scope)',
      tags: ['users'],
      auth: { kind: 'scope', scope: 'admin' },
      bucket: 'api',
      body: z.strictObject({
        email: z.email().max(254),
        password: z.string().min(12).max(256),
        role: z.enum(['staff', 'user']).default('user'),
        display_name: z.string().trim().min(1).max(100).optional(),
      }),
      response: UserSchema,
      status: 201,
      errors: ['conflict'],
      handler: async ({ body }) => {
        const id = await users.insertIfAbsent({
          email: body.email,
          passwordHash: await hashPassword(body.password),
          role: body.role,
          displayName: body.display_name,
        });
        if (!id) throw new AppError('conflict', { email: 'already registered' });
        return toUserView((await users.findById(id))!);
      },
    }),
  ];
}
