import { z } from 'zod';
import { textField } from '#shared/http/fields.js';
import { AppError } from '#shared/errors.js';
import { collectionMeta, cursorParam, PageMetaSchema, PAGINATION_NOTE, pagingOf, pagingQuery } from '#shared/http/pagination.js';
import { defineRoute, type RouteDef } from '#shared/http/route.js';
import { hashPassword, isWeakPassword } from '#shared/password.js';
import type { Repositories } from '#services/repositories.js';
import { toUserView } from './users.view.js';
import { rule } from '#shared/i18n/index.js';

export const UserSchema = z
  .object({
    id: z.uuid(),
    email: z.string(),
    role: z.enum(['staff', 'user']),
    display_name: z.string().nullable(),
    created_at: z.iso.datetime(),
  })
  .meta({ id: 'User' });

/** A users cursor is opaque: a version tag and the id of the last account of the previous page (an unknown id: an empty page). */
const encodeCursor = (id: string) => `u1.${id}`;
const USER_CURSOR = /^u1\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Accounts: staff create users (so that tests and scripts can set up several owners) and list them. */
export function usersRoutes({ users }: Pick<Repositories, 'users'>): RouteDef[] {
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
      query: z.object({ ...pagingQuery, cursor: cursorParam(USER_CURSOR) }),
      response: z.object({ users: z.array(UserSchema) }),
      meta: PageMetaSchema,
      handler: async ({ query, respond }) => {
        const paging = pagingOf(query);
        const at = paging.page !== undefined ? { offset: (paging.page - 1) * paging.limit } : { afterId: paging.cursor?.slice('u1.'.length) };
        const [rows, total] = await Promise.all([users.listPage(paging.limit + 1, at), users.count()]);
        const page = rows.slice(0, paging.limit);
        const next = rows.length > paging.limit ? encodeCursor(page.at(-1)!.id) : null;
        respond.meta(collectionMeta(page.length, total, paging, next));
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
        email: z.string().max(254).regex(z.regexes.email, rule('email')),
        password: z
          .string()
          .min(12)
          .max(256)
          .meta({
            description:
              'At least 12 characters, and not common or easy to guess (NIST SP 800-63B): a password of the breached-password lists ' +
              'zxcvbn-ts ships, or derived from one or from the e-mail (zxcvbn score below 3), is 409 `conflict` with `details.password` ' +
              "(as a reserved subdomain name: a rule of the server's lists, which no schema states; 422 stays for what the schema says).",
          }),
        role: z.enum(['staff', 'user']).default('user'),
        display_name: textField(100).optional(),
      }),
      response: UserSchema,
      status: 201,
      errors: ['conflict'],
      handler: async ({ body }) => {
        if (await isWeakPassword(body.password, [body.email, body.display_name ?? ''])) {
          throw new AppError('conflict', { password: rule('password_common') }, { messageKey: 'error.conflict.password_common' });
        }
        const id = await users.insertIfAbsent({
          email: body.email,
          passwordHash: await hashPassword(body.password),
          role: body.role,
          displayName: body.display_name,
        });
        if (!id) throw new AppError('conflict', { email: rule('already_registered') });
        return toUserView((await users.findById(id))!);
      },
    }),
  ];
}
