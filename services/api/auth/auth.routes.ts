import { z } from 'zod';
import { textField } from '#shared/http/fields.js';
import type { Context } from '#shared/context.js';
import { AppError } from '#shared/errors.js';
import { assertSameOrigin } from '#shared/http/register.js';
import { defineRoute, SESSION_COOKIE, type RouteDef } from '#shared/http/route.js';
import { SCOPES } from '#shared/http/scopes.js';
import { UserSchema } from '../users/users.routes.js';
import { toUserView } from '../users/users.view.js';
import type { Repositories } from '#services/repositories.js';
import type { authService } from './auth.service.js';
import type { Captcha } from './captcha.js';
import { DEVICE_COOKIE, DEVICE_COOKIE_PATH } from './device-cookie.js';

const tags = ['auth'];

/** Login, logout and the current account. */
export function authRoutes(
  { config, repositories }: Pick<Context, 'config'> & { repositories: Pick<Repositories, 'users'> },
  service: ReturnType<typeof authService>,
  captcha: Captcha,
): RouteDef[] {
  const { users } = repositories;
  const cookieOptions = {
    path: '/',
    httpOnly: true,
    sameSite: 'lax' as const,
    // Follows PUBLIC_URL's scheme: a browser drops a Secure cookie set over plain http (make run on localhost).
    secure: config.secureCookies,
  };
  return [
    defineRoute({
      operationId: 'login',
      method: 'POST',
      path: '/auth/login',
      summary: 'Sign in with e-mail and password; sets the session cookie',
      description:
        'The auth bucket (RATE_LIMIT_AUTH) counts per IP and e-mail. BRUTEFORCE_MAX_ATTEMPTS failures for one e-mail within ' +
        'BRUTEFORCE_WINDOW seconds lock it for BRUTEFORCE_LOCKOUT seconds (429 `rate_limited`, `details.reason` `account_locked`, with ' +
        "Retry-After and the auth bucket's rate-limit headers, nothing remaining until then; the lock wins over the " +
        'counter); a successful login clears the count. Each attempt is taken atomically before its password is checked, so at most ' +
        'BRUTEFORCE_MAX_ATTEMPTS passwords are checked per e-mail and window whatever the concurrency; the others answer as locked. Wrong e-mail and wrong password answer the same 401, in the same time. ' +
        'The right password of an account staff have disabled is 401 `unauthorized` with `details.reason` `account_disabled` ' +
        '(no session; the attempt stays counted as a failure). ' +
        'With ENABLE_CAPTCHA, after CAPTCHA_AFTER failures for an e-mail the answer is 403 `forbidden` with ' +
        '`details.reason` `captcha_required` (`captcha_invalid` for a wrong or spent solution) and a proof-of-work challenge in ' +
        '`details.challenge` until a login carries a solved one; attempts without one are counted atomically before any check, so ' +
        'parallel guesses get no more than CAPTCHA_AFTER checks between them. ' +
        'The cookie is HttpOnly, SameSite=Lax, and Secure when PUBLIC_URL is https. ' +
        'A successful login also sets `lt_device` (OWASP device cookie: signed, HttpOnly, SameSite=Lax, Path=/auth, Secure when the ' +
        'request came over https, 180 days), naming the account and this browser. A login carrying a valid one of the same account ' +
        "spends that device's own allowance instead of the account's: the same BRUTEFORCE_* numbers, its own lock (429 " +
        '`rate_limited`, `details.reason` `device_locked`), no CAPTCHA; so a lock others cause does not lock out a browser that ' +
        "signed in before. A forged, expired or other account's device cookie counts for nothing.",
      tags,
      auth: { kind: 'none' },
      bucket: 'auth',
      beforeLimit: async (request) => {
        const email = (request.body as { email?: unknown } | undefined)?.email;
        if (typeof email === 'string') await service.assertNotLocked(email, request.cookies?.[DEVICE_COOKIE]);
      },
      body: z.strictObject({
        email: textField(254),
        password: z.string().min(1).max(256),
        captcha: z
          .string()
          .max(4096)
          .optional()
          .meta({ description: 'With ENABLE_CAPTCHA, after CAPTCHA_AFTER failures: the base64 ALTCHA payload solving a challenge from GET /auth/captcha.' }),
      }),
      response: z.object({ user: UserSchema, session: z.object({ expires_at: z.iso.datetime() }) }),
      errors: ['unauthorized', 'forbidden'],
      handler: async ({ body, request, reply }) => {
        // A cross-site login form must not sign a victim into the attacker's account (login CSRF);
        // scripts without Origin or Referer headers may still log in.
        assertSameOrigin(request, config.publicUrl, { allowMissing: true });
        const result = await service.login(body, {
          ip: request.ip,
          userAgent: request.headers['user-agent'] ?? null,
          deviceCookie: request.cookies?.[DEVICE_COOKIE],
          locale: request.locale,
        });
        reply.setCookie(SESSION_COOKIE, result.secret, { ...cookieOptions, expires: result.expiresAt });
        // Secure only over https as the request arrived (a plain-HTTP LAN origin must keep it); sent to /auth only.
        reply.setCookie(DEVICE_COOKIE, result.device.value, {
          path: DEVICE_COOKIE_PATH,
          httpOnly: true,
          sameSite: 'lax',
          secure: request.protocol === 'https',
          expires: result.device.expiresAt,
        });
        return { user: result.user, session: { expires_at: result.expiresAt.toISOString() } };
      },
    }),
    defineRoute({
      operationId: 'getCaptchaChallenge',
      method: 'GET',
      path: '/auth/captcha',
      summary: 'A fresh proof-of-work CAPTCHA challenge (ALTCHA, self-hosted), for logins that need one',
      tags,
      auth: { kind: 'none' },
      bucket: 'auth',
      response: z
        .object({ algorithm: z.string(), challenge: z.string(), maxnumber: z.number().int().optional(), salt: z.string(), signature: z.string() })
        .meta({ id: 'CaptchaChallenge', description: 'Solve with the ALTCHA widget or altcha-lib; expires after 5 minutes; usable once.' }),
      handler: async () => captcha.challenge(),
    }),
    defineRoute({
      operationId: 'logout',
      method: 'POST',
      path: '/auth/logout',
      summary: 'End the current session (it is revoked server-side) and clear the cookie',
      tags,
      auth: { kind: 'session' },
      bucket: 'auth',
      response: z.object({ signed_out: z.literal(true) }),
      handler: async ({ principal, reply }) => {
        await service.logout(principal!.sessionHash!);
        reply.clearCookie(SESSION_COOKIE, cookieOptions);
        return { signed_out: true as const };
      },
    }),
    defineRoute({
      operationId: 'getMe',
      method: 'GET',
      path: '/api/v1/me',
      summary: 'The current account, how it is authenticated and with which scopes',
      tags,
      auth: { kind: 'account' },
      bucket: 'api',
      response: UserSchema.extend({
        authenticated_via: z.enum(['session', 'token']),
        scopes: z.array(z.enum(SCOPES)),
        token_id: z.uuid().optional(),
      }),
      handler: async ({ principal }) => {
        const user = await users.findById(principal!.userId);
        if (!user) throw new AppError('unauthorized');
        return {
          ...toUserView(user),
          authenticated_via: principal!.via,
          scopes: [...principal!.scopes],
          ...(principal!.tokenId ? { token_id: principal!.tokenId } : {}),
        };
      },
    }),
  ];
}
