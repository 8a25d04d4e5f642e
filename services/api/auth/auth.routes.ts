import type { FastifyReply, FastifyRequest } from 'fastify';
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
import type { authService, SessionResult } from './auth.service.js';
import type { Captcha } from './captcha.js';
import { DEVICE_COOKIE, DEVICE_COOKIE_PATH } from './device-cookie.js';

const tags = ['auth'];

/** A completed sign-in (POST /auth/login, or its second step). */
const SignedInSchema = z
  .object({
    status: z.literal('signed_in'),
    user: UserSchema,
    session: z.object({ expires_at: z.iso.datetime() }),
    totp_enrolment_required: z.boolean().meta({
      description: 'True for a staff account without TOTP while staff must have it: the session reaches only the enrolment routes until TOTP is on.',
    }),
  })
  .meta({ id: 'SignedIn' });

/** A right password for an account with TOTP: the second step is asked for. */
const TotpRequiredSchema = z
  .object({
    status: z.literal('totp_required'),
    challenge: z.string().meta({ description: 'For POST /auth/login/totp: single-use, valid until `expires_at` (5 minutes).' }),
    expires_at: z.iso.datetime(),
  })
  .meta({ id: 'TotpRequired' });

/** The fields of a second factor, shared with /api/v1/me/totp. */
export const totpCodeField = z
  .string()
  .regex(/^\d{6}$/)
  .meta({ description: 'The 6-digit code the authenticator app shows now.', example: '492039' });
export const recoveryCodeField = z
  .string()
  .min(1)
  .max(64)
  .meta({ description: 'One of the recovery codes (case, spaces and dashes do not matter); each works once.', example: 'k7pq-3mzx-w9hc-tn4e' });
const challengeField = z.string().min(1).max(128).meta({ description: 'The `challenge` of the POST /auth/login answer.' });

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
  /** Sets the session and device cookies of a completed sign-in and answers it. */
  const signedIn = (result: SessionResult, request: FastifyRequest, reply: FastifyReply) => {
    reply.setCookie(SESSION_COOKIE, result.secret, { ...cookieOptions, expires: result.expiresAt });
    // Secure only over https as the request arrived (a plain-HTTP LAN origin must keep it); sent to /auth only.
    reply.setCookie(DEVICE_COOKIE, result.device.value, {
      path: DEVICE_COOKIE_PATH,
      httpOnly: true,
      sameSite: 'lax',
      secure: request.protocol === 'https',
      expires: result.device.expiresAt,
    });
    return {
      status: 'signed_in' as const,
      user: result.user,
      session: { expires_at: result.expiresAt.toISOString() },
      totp_enrolment_required: result.totpEnrolmentRequired,
    };
  };
  const captchaField = z
    .string()
    .max(4096)
    .optional()
    .meta({ description: 'With ENABLE_CAPTCHA, after CAPTCHA_AFTER failures: the base64 ALTCHA payload solving a challenge from GET /auth/captcha.' });
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
        "signed in before. A forged, expired or other account's device cookie counts for nothing. " +
        'For an account with two-factor sign-in (TOTP), a right password sets no cookie: the answer is `status` `totp_required` with a ' +
        '`challenge` for POST /auth/login/totp (single-use, valid 5 minutes), and the count of attempts is not cleared until that step ' +
        'succeeds. A staff account without TOTP while GET /api/v1/settings/security says `require_totp_for_staff` is signed in with ' +
        '`totp_enrolment_required` true: until it enables TOTP, its session reaches only GET /api/v1/me, /api/v1/me/totp, ' +
        'POST /api/v1/me/totp/confirm and POST /auth/logout (any other route is 403 `forbidden`, `details.reason` ' +
        '`totp_enrolment_required`). API tokens are not affected by TOTP: a token is already a second credential.',
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
        captcha: captchaField,
      }),
      response: z.union([SignedInSchema, TotpRequiredSchema]),
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
        if (result.kind === 'totp') return { status: 'totp_required' as const, challenge: result.challenge, expires_at: result.expiresAt.toISOString() };
        return signedIn(result, request, reply);
      },
    }),
    defineRoute({
      operationId: 'loginWithTotp',
      method: 'POST',
      path: '/auth/login/totp',
      summary: 'Second step of a sign-in with two-factor (TOTP): the challenge and a code or recovery code; sets the session cookie',
      description:
        'Takes the `challenge` POST /auth/login answered for an account with TOTP, and either `code` (the 6 digits of the ' +
        'authenticator app) or `recovery_code` (one of the ten, each usable once). A code is accepted for its 30-second step and the ' +
        'one either side, and never twice: not again within its step, nor an earlier one after it. ' +
        'The same rules as POST /auth/login apply to this step, with the same counts: a wrong code is a failed attempt of the ' +
        "account's (or its known device's) allowance and locks it at BRUTEFORCE_MAX_ATTEMPTS (429 `rate_limited`, `details.reason` " +
        '`account_locked` or `device_locked`); with ENABLE_CAPTCHA, a CAPTCHA is required here whenever the password step would require ' +
        'one (403 `forbidden`, `details.reason` `captcha_required`). A wrong or spent code is 401 `unauthorized` with `details.reason` ' +
        '`second_factor_wrong`; an unknown, used or expired challenge is 401 with `challenge_invalid` (sign in with the password ' +
        'again). On success the challenge is spent and the answer and cookies are those of POST /auth/login; using a recovery ' +
        'code is audited (`auth.recovery_code_used`).',
      tags,
      auth: { kind: 'none' },
      bucket: 'auth',
      beforeLimit: async (request) => {
        const challenge = (request.body as { challenge?: unknown } | undefined)?.challenge;
        if (typeof challenge === 'string') await service.assertChallengeNotLocked(challenge, request.cookies?.[DEVICE_COOKIE]);
      },
      body: z.union([
        z.strictObject({ challenge: challengeField, code: totpCodeField, captcha: captchaField }),
        z.strictObject({ challenge: challengeField, recovery_code: recoveryCodeField, captcha: captchaField }),
      ]),
      response: SignedInSchema,
      errors: ['unauthorized', 'forbidden'],
      handler: async ({ body, request, reply }) => {
        assertSameOrigin(request, config.publicUrl, { allowMissing: true });
        const factor = 'code' in body ? { code: body.code } : { recovery_code: body.recovery_code };
        const result = await service.loginWithTotp(
          { challenge: body.challenge, factor, captcha: body.captcha },
          { ip: request.ip, userAgent: request.headers['user-agent'] ?? null, deviceCookie: request.cookies?.[DEVICE_COOKIE], locale: request.locale },
        );
        return signedIn(result, request, reply);
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
      duringTotpEnrolment: true,
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
      duringTotpEnrolment: true,
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
        totp_enrolment_required: z.boolean().meta({
          description:
            'True for the session of a staff account without TOTP while staff must have it: it reaches only GET /api/v1/me, /api/v1/me/totp, POST /api/v1/me/totp/confirm and POST /auth/logout until TOTP is on.',
        }),
      }),
      handler: async ({ principal }) => {
        const user = await users.findById(principal!.userId);
        if (!user) throw new AppError('unauthorized');
        return {
          ...toUserView(user),
          authenticated_via: principal!.via,
          scopes: [...principal!.scopes],
          ...(principal!.tokenId ? { token_id: principal!.tokenId } : {}),
          totp_enrolment_required: principal!.totpEnrolmentRequired === true,
        };
      },
    }),
  ];
}
