import { z } from 'zod';
import type { Context } from '#shared/context.js';
import { AppError } from '#shared/errors.js';
import { defineRoute, SESSION_COOKIE, type RouteDef } from '#shared/http/route.js';
import type { Repositories } from '#services/repositories.js';
import { reauthenticate } from '../auth/password.service.js';
import { checkSecondFactor } from '../auth/totp.service.js';
import type { UsersService } from './users.service.js';
import { DeletedUserSchema } from './users.view.js';

/** The current 6 digits of an authenticator app; anything else is taken for a recovery code. */
const TOTP_DIGITS = /^\d{6}$/;

/** An account deletes itself (`DELETE /api/v1/me`): the password, and the second factor when it has one. */
export function deleteOwnAccountRoutes(
  context: Pick<Context, 'config' | 'cache' | 'secrets'> & { repositories: Pick<Repositories, 'users' | 'totp'> },
  service: Pick<UsersService, 'deleteOwn'>,
): RouteDef[] {
  const { totp } = context.repositories;
  /** Refuses the deletion of an account with TOTP unless a right code (or an unused recovery code) comes with it. */
  const secondFactor = (userId: string, code: string | undefined) => async () => {
    if (!(await totp.isEnabled(userId))) return;
    if (code === undefined) throw new AppError('forbidden', { reason: 'totp_required' }, { messageKey: 'error.forbidden.totp_required' });
    const factor = TOTP_DIGITS.test(code) ? { code } : { recovery_code: code };
    if (!(await checkSecondFactor(totp, context.secrets, userId, factor))) {
      throw new AppError('forbidden', { reason: 'totp_code_wrong' }, { messageKey: 'error.forbidden.totp_code_wrong' });
    }
  };
  return [
    defineRoute({
      operationId: 'deleteOwnAccount',
      method: 'DELETE',
      path: '/api/v1/me',
      summary: "Delete the caller's own account with its links, tokens, webhooks, sessions and raw visits",
      description:
        'Export first with GET /api/v1/export; deletion cannot be undone. Session only (an API token is 401 `unauthorized`, ' +
        "`details.reason` `session_required`). `password` must be the account's password: a wrong one is 403 `forbidden` " +
        '(`details.reason` `current_password_wrong`); an account with two-factor sign-in also gives `totp_code`, the current code ' +
        'of its authenticator app or an unused recovery code (missing: 403 `totp_required`; wrong or used: 403 `totp_code_wrong`). ' +
        'Wrong tries count together with those of POST /api/v1/me/password: BRUTEFORCE_MAX_ATTEMPTS within BRUTEFORCE_WINDOW ' +
        'refuse further tries for the rest of the window (429 `rate_limited`, `details.reason` `password_attempts`). Then the ' +
        'account is deleted as staff delete one (DELETE /api/v1/users/{id}): the same refusals, checked before anything is deleted ' +
        '(409 `conflict` `last_team_owner` with `details.teams`, `team_subdomains` with `details.subdomains`), the same counts, ' +
        'and the same audit entry (`user.deleted`, `details.by` `self`). The last active staff account is refused (409 ' +
        '`conflict`, `details.reason` `last_staff`): another account is made staff first. On success the session cookie is ' +
        "cleared, and the account's sessions and API tokens answer 401 from then on.",
      tags: ['auth'],
      auth: { kind: 'session' },
      bucket: 'auth',
      body: z.strictObject({
        password: z.string().min(1).max(256).meta({ example: 'the current password' }),
        totp_code: z
          .string()
          .min(1)
          .max(64)
          .optional()
          .meta({ description: 'With two-factor sign-in only: the current 6-digit code, or an unused recovery code (spent by this use).', example: '123456' }),
      }),
      response: DeletedUserSchema,
      errors: ['conflict', 'service_unavailable'],
      handler: async ({ body, principal, request, reply }) => {
        const userId = principal!.userId;
        await reauthenticate(context, userId, body.password, secondFactor(userId, body.totp_code));
        const result = await service.deleteOwn(userId, request.ip, request.id);
        reply.clearCookie(SESSION_COOKIE, { path: '/', httpOnly: true, sameSite: 'lax', secure: context.config.secureCookies });
        return result;
      },
    }),
  ];
}
