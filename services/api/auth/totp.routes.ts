import { z } from 'zod';
import { defineRoute, type RouteDef } from '#shared/http/route.js';
import { recoveryCodeField, totpCodeField } from './auth.routes.js';
import { RECOVERY_CODES, type SecondFactor, type TotpService } from './totp.service.js';

const tags = ['auth'];

const PASSWORD_RULES =
  "`password` must be the account's current password: a wrong one is 403 `forbidden` (`details.reason` `current_password_wrong`). " +
  'Wrong passwords and codes count together with those of POST /api/v1/me/password: BRUTEFORCE_MAX_ATTEMPTS within ' +
  'BRUTEFORCE_WINDOW refuse further tries for the rest of the window (429 `rate_limited`, `details.reason` `password_attempts`).';

const FACTOR_RULES =
  'With `code` (the current 6 digits, never accepted twice) or `recovery_code` (spent by this use); a wrong or spent one is 403 ' +
  '`forbidden` with `details.reason` `totp_code_wrong`. Without TOTP enabled, 409 `conflict` (`details.reason` `totp_not_enabled`).';

const SESSION_ONLY = 'Session only (an API token is 401 `unauthorized`, `details.reason` `session_required`). ';

const passwordField = z.string().min(1).max(256).meta({ example: 'the current password' });

/** A body of the password and one second factor: a code or a recovery code, never both. */
const passwordAndFactor = z.union([
  z.strictObject({ password: passwordField, code: totpCodeField }),
  z.strictObject({ password: passwordField, recovery_code: recoveryCodeField }),
]);

const factorOf = (body: { code: string } | { recovery_code: string }): SecondFactor =>
  'code' in body ? { code: body.code } : { recovery_code: body.recovery_code };

const RecoveryCodesSchema = z.array(z.string()).length(RECOVERY_CODES).meta({
  description:
    'Ten recovery codes, shown this once (only their SHA-256 is stored): each signs in once in place of a code (POST /auth/login/totp, `recovery_code`).',
});

const TotpStatusSchema = z
  .object({
    enabled: z.boolean(),
    enrolled_at: z.iso.datetime().nullable().meta({ description: 'When TOTP was enabled (its enrolment confirmed); null while off.' }),
    pending: z.boolean().meta({ description: 'An enrolment was started and waits for its first code (POST /api/v1/me/totp/confirm).' }),
    recovery_codes_left: z.number().int().min(0).max(RECOVERY_CODES),
  })
  .meta({ id: 'TotpStatus' });

/**
 * Two-factor sign-in by TOTP (`/api/v1/me/totp`): status, enrolment by QR code confirmed by a code,
 * disabling, and new recovery codes. Its second sign-in step is POST /auth/login/totp (auth.routes.ts).
 */
export function totpRoutes(service: TotpService): RouteDef[] {
  return [
    defineRoute({
      operationId: 'getTotp',
      method: 'GET',
      path: '/api/v1/me/totp',
      summary: "Whether two-factor sign-in (TOTP) is on for the caller's account, and how many recovery codes are left",
      description:
        'Any credential of the account (a session or an API token). API tokens are not affected by TOTP: a token is already a second ' +
        'credential, and keeps working whether TOTP is on or off.',
      tags,
      auth: { kind: 'account' },
      duringTotpEnrolment: true,
      bucket: 'api',
      response: TotpStatusSchema,
      handler: async ({ principal }) => service.status(principal!.userId),
    }),
    defineRoute({
      operationId: 'startTotpEnrolment',
      method: 'POST',
      path: '/api/v1/me/totp',
      summary: 'Start setting up two-factor sign-in: a new TOTP secret, as text, otpauth:// URI and QR code',
      description:
        SESSION_ONLY +
        PASSWORD_RULES +
        ' Answers a new secret (RFC 6238: HMAC-SHA-1, 6 digits, 30-second steps) to add to an authenticator app, by its QR code or its ' +
        'text; TOTP is not on until POST /api/v1/me/totp/confirm takes a first code. Starting again replaces a pending secret. While ' +
        'TOTP is on, 409 `conflict` (`details.reason` `totp_enabled`): turn it off first. The secret is stored encrypted with the ' +
        'platform secrets key (AES-256-GCM) and never logged. Audited (`user.totp_enrolment_started`).',
      tags,
      auth: { kind: 'session' },
      duringTotpEnrolment: true,
      bucket: 'auth',
      body: z.strictObject({ password: passwordField }),
      response: z.object({
        secret: z.string().meta({ description: 'The shared secret in base32, for typing into an app that cannot scan the QR code.' }),
        otpauth_uri: z.string().meta({ description: 'The otpauth://totp/ URI (Key Uri Format) the QR code encodes.' }),
        qr_code: z.string().meta({ description: 'The QR code of `otpauth_uri`: an SVG image as a data: URL, for an img element.' }),
      }),
      status: 201,
      errors: ['conflict'],
      handler: async ({ body, principal, request }) => {
        const enrolment = await service.enrol({ userId: principal!.userId, password: body.password, ip: request.ip });
        return { secret: enrolment.secret, otpauth_uri: enrolment.otpauthUri, qr_code: enrolment.qrSvg };
      },
    }),
    defineRoute({
      operationId: 'confirmTotpEnrolment',
      method: 'POST',
      path: '/api/v1/me/totp/confirm',
      summary: 'Turn two-factor sign-in on with a first code of the new secret; answers ten recovery codes, shown once',
      description:
        SESSION_ONLY +
        'A wrong code is 403 `forbidden` (`details.reason` `totp_code_wrong`) and the enrolment stays pending. Without a pending ' +
        'enrolment (POST /api/v1/me/totp), 409 `conflict` (`details.reason` `totp_not_pending`, or `totp_enabled` when TOTP is on). ' +
        'From now on, signing in asks for a code after the password. Audited (`user.totp_enabled`).',
      tags,
      auth: { kind: 'session' },
      duringTotpEnrolment: true,
      bucket: 'auth',
      body: z.strictObject({ code: totpCodeField }),
      response: z.object({ enabled: z.literal(true), recovery_codes: RecoveryCodesSchema }),
      errors: ['conflict'],
      handler: async ({ body, principal, request }) => {
        const codes = await service.confirm({ userId: principal!.userId, code: body.code, ip: request.ip });
        return { enabled: true as const, recovery_codes: codes };
      },
    }),
    defineRoute({
      operationId: 'disableTotp',
      method: 'DELETE',
      path: '/api/v1/me/totp',
      summary: 'Turn two-factor sign-in off (the password and a code or recovery code)',
      description:
        SESSION_ONLY +
        PASSWORD_RULES +
        ' ' +
        FACTOR_RULES +
        ' The secret and the recovery codes are deleted. A staff account while staff must have TOTP is then held to enrolling again. ' +
        'Audited (`user.totp_disabled`).',
      tags,
      auth: { kind: 'session' },
      bucket: 'auth',
      body: passwordAndFactor,
      response: z.object({ enabled: z.literal(false) }),
      errors: ['conflict'],
      handler: async ({ body, principal, request }) => {
        await service.disable({ userId: principal!.userId, password: body.password, factor: factorOf(body), ip: request.ip });
        return { enabled: false as const };
      },
    }),
    defineRoute({
      operationId: 'regenerateTotpRecoveryCodes',
      method: 'POST',
      path: '/api/v1/me/totp/recovery-codes',
      summary: 'Ten new recovery codes, shown once; the old ones stop working (the password and a code or recovery code)',
      description: SESSION_ONLY + PASSWORD_RULES + ' ' + FACTOR_RULES + ' Audited (`user.totp_recovery_codes_regenerated`).',
      tags,
      auth: { kind: 'session' },
      bucket: 'auth',
      body: passwordAndFactor,
      response: z.object({ recovery_codes: RecoveryCodesSchema }),
      status: 201,
      errors: ['conflict'],
      handler: async ({ body, principal, request }) => {
        const codes = await service.regenerate({ userId: principal!.userId, password: body.password, factor: factorOf(body), ip: request.ip });
        return { recovery_codes: codes };
      },
    }),
  ];
}
