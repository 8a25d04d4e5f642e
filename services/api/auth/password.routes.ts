import { z } from 'zod';
import { defineRoute, type RouteDef } from '#shared/http/route.js';
import { assertSameOrigin } from '#shared/http/register.js';
import type { Context } from '#shared/context.js';
import { RESET_LINK_PATH, type PasswordService } from './password.service.js';

const NEW_PASSWORD_RULES =
  'At least 12 characters, and not common or easy to guess, as at sign-up (NIST SP 800-63B): a password of the breached-password lists ' +
  'zxcvbn-ts ships, or derived from one or from the e-mail (zxcvbn score below 3), is 409 `conflict` with `details.password`.';

const newPassword = () => z.string().min(12).max(256).meta({ description: NEW_PASSWORD_RULES, example: 'plum tractor velvet orbit lantern' });

/** Password change (`/api/v1/me/password`), reset by e-mail (`/auth/password-reset`) and staff-issued reset links. */
export function passwordRoutes({ config }: Pick<Context, 'config'>, service: PasswordService): RouteDef[] {
  return [
    defineRoute({
      operationId: 'changePassword',
      method: 'POST',
      path: '/api/v1/me/password',
      summary: "Change the caller's password; every other session of the account is signed out",
      description:
        'Session only (an API token is 401 `unauthorized`, `details.reason` `session_required`). `current_password` must be the ' +
        "account's password: a wrong one is 403 `forbidden` (`details.reason` `current_password_wrong`); BRUTEFORCE_MAX_ATTEMPTS wrong " +
        'ones within BRUTEFORCE_WINDOW refuse further tries for the rest of the window (429 `rate_limited`, `details.reason` ' +
        '`password_attempts`, with Retry-After). ' +
        NEW_PASSWORD_RULES +
        ' On success every other session of the account is revoked (their next request is 401) and the answer says how many; the ' +
        "caller's session stays signed in, and API tokens are untouched. The change is audited (`user.password_changed`).",
      tags: ['auth'],
      auth: { kind: 'session' },
      bucket: 'auth',
      body: z.strictObject({
        current_password: z.string().min(1).max(256).meta({ example: 'the current password' }),
        new_password: newPassword(),
      }),
      response: z.object({
        password_changed: z.literal(true),
        other_sessions_revoked: z.number().int().min(0).meta({ description: "How many of the account's other sessions were signed out." }),
      }),
      errors: ['conflict'],
      handler: async ({ body, principal, request }) => {
        const { otherSessionsRevoked } = await service.change({
          userId: principal!.userId,
          sessionHash: principal!.sessionHash!,
          current: body.current_password,
          next: body.new_password,
          ip: request.ip,
        });
        return { password_changed: true as const, other_sessions_revoked: otherSessionsRevoked };
      },
    }),
    defineRoute({
      operationId: 'requestPasswordReset',
      method: 'POST',
      path: '/auth/password-reset',
      summary: 'Ask for a password-reset link by e-mail; the same answer whether or not the address has an account',
      description:
        'Answers 202 at once, the same for any address, existing or not; then, when the address names an account and SMTP_URL is set, ' +
        `a link to \`${RESET_LINK_PATH}#token=…\` on PUBLIC_URL is mailed to it in the language the account last signed in with ` +
        '(else the language of this request); a disabled account is sent nothing. The link is valid for one hour and works once; only its SHA-256 is stored. Without ' +
        'SMTP_URL nothing is mailed: staff issue links with POST /api/v1/users/{id}/password-reset. Limited per IP by the auth ' +
        'bucket (RATE_LIMIT_AUTH) and per submitted address, existing or not, by PASSWORD_RESET_PER_ADDRESS (429 `rate_limited`, ' +
        '`details.reason` `address_limited`, with Retry-After).',
      tags: ['auth'],
      auth: { kind: 'none' },
      bucket: 'auth',
      // Per IP alone: the auth bucket's usual key adds the e-mail, which would give each address its own allowance.
      rateKey: (request) => `reset|${request.ip}`,
      body: z.strictObject({ email: z.string().min(3).max(254).meta({ example: 'someone@example.com' }) }),
      response: z.object({
        requested: z.literal(true).meta({ description: 'Always true: whether a mail was sent is not told (no account enumeration).' }),
      }),
      status: 202,
      errors: ['forbidden'],
      handler: async ({ body, request, locale }) => {
        assertSameOrigin(request, config.publicUrl, { allowMissing: true });
        await service.requestReset({ email: body.email, ip: request.ip, locale });
        return { requested: true as const };
      },
    }),
    defineRoute({
      operationId: 'confirmPasswordReset',
      method: 'POST',
      path: '/auth/password-reset/confirm',
      summary: "Set a new password with a reset link's token; every session of the account is signed out",
      description:
        'The token is the part after `#token=` of the link. An unknown, used or expired link is 403 `forbidden` with ' +
        '`details.reason` `reset_link_unknown`, `reset_link_used` or `reset_link_expired`; a link of an account staff have ' +
        'disabled is 403 `forbidden`, `details.reason` `account_disabled`. ' +
        NEW_PASSWORD_RULES +
        ' (the link stays usable). On success the link and every other open link of the account are spent, every session of the ' +
        'account is revoked, and nobody is signed in: sign in with the new password. Audited (`user.password_reset`).',
      tags: ['auth'],
      auth: { kind: 'none' },
      bucket: 'auth',
      rateKey: (request) => `reset-confirm|${request.ip}`,
      body: z.strictObject({
        token: z.string().min(1).max(256).meta({ example: 'Yk3v2m0dO3bq8lJmS2o0v9C6l3f2J0Qw1yXH7m8t0aE' }),
        password: newPassword(),
      }),
      response: z.object({
        password_reset: z.literal(true),
        sessions_revoked: z.number().int().min(0).meta({ description: 'How many sessions of the account were signed out.' }),
      }),
      errors: ['forbidden', 'conflict'],
      handler: async ({ body, request }) => {
        assertSameOrigin(request, config.publicUrl, { allowMissing: true });
        const { sessionsRevoked } = await service.confirmReset({ token: body.token, password: body.password, ip: request.ip });
        return { password_reset: true as const, sessions_revoked: sessionsRevoked };
      },
    }),
    defineRoute({
      operationId: 'issuePasswordReset',
      method: 'POST',
      path: '/api/v1/users/{id}/password-reset',
      summary: 'Issue a password-reset link for an account, to hand over by other means (staff only)',
      description:
        'A staff session, or a token with the admin scope. For platforms without SMTP_URL, or a user who cannot reach their mailbox: ' +
        'the answer carries the link (shown once; only its SHA-256 is stored), valid for one hour and usable once, exactly as a mailed ' +
        'one (POST /auth/password-reset/confirm). Nothing is mailed, and the account keeps its password and sessions until the link is ' +
        'used. Audited (`user.password_reset_issued`). An unknown id is 404 `not_found`; a disabled account is 409 `conflict`, ' +
        '`details.reason` `account_disabled` (re-enable it first).',
      tags: ['users'],
      auth: { kind: 'scope', scope: 'admin' },
      bucket: 'api',
      params: z.object({ id: z.uuid() }),
      response: z.object({
        url: z.url().meta({ description: `The reset link: PUBLIC_URL + \`${RESET_LINK_PATH}#token=\` + the secret.` }),
        expires_at: z.iso.datetime(),
      }),
      status: 201,
      errors: ['not_found', 'conflict'],
      handler: async ({ params, principal, request }) => {
        const link = await service.issueByStaff({ staffId: principal!.userId, userId: params.id, ip: request.ip });
        return { url: link.url, expires_at: link.expiresAt.toISOString() };
      },
    }),
  ];
}
