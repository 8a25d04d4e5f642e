import { z } from 'zod';
import { AppError } from '../../../shared/errors.js';
import { defineRoute } from '../../../shared/http/route.js';
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
/** Accounts: staff create users (so that tests and scripts can set up several owners). */
export function usersRoutes(context) {
    const users = usersRepository(context.db.db);
    return [
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
                if (!id)
                    throw new AppError('conflict', { email: 'already registered' });
                return toUserView((await users.findById(id)));
            },
        }),
    ];
}
//# sourceMappingURL=users.routes.js.map