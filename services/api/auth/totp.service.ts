import { createHash, randomInt } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import type { Context } from '#shared/context.js';
import { AppError } from '#shared/errors.js';
import type { Logger } from '#shared/logger.js';
import type { SecretBox } from '#shared/secrets/secret-box.js';
import type { Repositories } from '#services/repositories.js';
import { qrImage } from '../links/qr-image.js';
import type { AbuseGuard } from './abuse.js';
import { reauthenticate } from './password.service.js';
import type { TotpRepository } from './totp.repository.js';

/** RFC 6238 as every authenticator app reads it: HMAC-SHA-1, 6 digits, 30-second steps. */
const PERIOD_SEC = 30;
const DIGITS = 6;
/** Steps either side of now a code is accepted for: a clock up to 30 s off, or a code typed as it changed. */
const WINDOW = 1;
/** Recovery codes issued at a time. */
export const RECOVERY_CODES = 10;
/** 20 bytes: the secret length RFC 4226 recommends (160 bits). */
const SECRET_BYTES = 20;
const RECOVERY_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';

/** What binds a sealed TOTP secret to its account: a value copied onto another row does not open there. */
const purposeOf = (userId: string) => `totp:${userId}`;

/** A second factor as a sign-in or a change presents it: a 6-digit code, or one of the recovery codes. */
export type SecondFactor = { code: string } | { recovery_code: string };

/**
 * A new recovery code: 16 characters of a 31-letter alphabet without look-alikes (79 bits), in
 * four groups. High entropy is what lets a plain SHA-256 store it: no dictionary reaches it.
 */
function newRecoveryCode(): string {
  const chars = Array.from({ length: 16 }, () => RECOVERY_ALPHABET[randomInt(RECOVERY_ALPHABET.length)]);
  return [0, 4, 8, 12].map((at) => chars.slice(at, at + 4).join('')).join('-');
}

/** How a recovery code is stored: SHA-256 of the account and the code as typed without case, spaces or dashes. */
export function recoveryCodeHash(userId: string, code: string): string {
  const normalized = code.toLowerCase().replace(/[\s-]/g, '');
  return createHash('sha256').update(`${userId}:${normalized}`).digest('hex');
}

/** The time-step a code is accepted for, or undefined when it matches none within WINDOW of now. */
function stepOf(secretBase32: string, code: string, now = Date.now()): number | undefined {
  if (!/^\d{6}$/.test(code)) return undefined;
  const delta = TOTP.validate({ token: code, secret: Secret.fromBase32(secretBase32), digits: DIGITS, period: PERIOD_SEC, window: WINDOW, timestamp: now });
  return delta === null ? undefined : Math.floor(now / 1000 / PERIOD_SEC) + delta;
}

const codeRefused = () => new AppError('forbidden', { reason: 'totp_code_wrong' }, { messageKey: 'error.forbidden.totp_code_wrong' });

/**
 * Checks a second factor of an account with TOTP enabled: a code of a step later than any accepted
 * before (so never replayed, even within its 30 s), or an unused recovery code, which is spent.
 * True when accepted. Both are taken atomically, so parallel uses of one code get one success.
 */
export async function checkSecondFactor(
  totp: TotpRepository,
  box: SecretBox,
  userId: string,
  factor: SecondFactor,
): Promise<'code' | 'recovery_code' | undefined> {
  const row = await totp.find(userId);
  if (!row?.enabled_at) return undefined;
  if ('recovery_code' in factor) return (await totp.useRecoveryCode(userId, recoveryCodeHash(userId, factor.recovery_code))) ? 'recovery_code' : undefined;
  const step = stepOf(box.open(row.secret, purposeOf(userId)), factor.code);
  return step !== undefined && (await totp.takeStep(userId, step)) ? 'code' : undefined;
}

/** Whether an account must enrol in TOTP before anything else: staff, while staff are required to have it, without it. */
export async function totpEnrolmentRequired(repositories: Pick<Repositories, 'totp' | 'settings'>, user: { id: string; role: string }): Promise<boolean> {
  if (user.role !== 'staff') return false;
  const [settings, enabled] = await Promise.all([repositories.settings.security(), repositories.totp.isEnabled(user.id)]);
  return settings.require_totp_for_staff && !enabled;
}

/**
 * Two-factor sign-in by TOTP (RFC 6238, with otpauth): enrolment by QR code confirmed by a code,
 * ten single-use recovery codes, disabling and new recovery codes. Every change needs the current
 * password (and, once enabled, a code or recovery code), counted as password changes are; every one
 * is audited. The secret is sealed with the secrets key; recovery codes are kept as hashes only.
 */
export function totpService(
  context: Pick<Context, 'config' | 'cache' | 'secrets'> & { log: Logger; repositories: Pick<Repositories, 'users' | 'totp' | 'settings'> },
  abuse: Pick<AbuseGuard, 'audit'>,
) {
  const { totp } = context.repositories;
  const box = context.secrets;
  const issuer = `linktrack (${new URL(context.config.publicUrl).hostname})`;

  /** A fresh set of recovery codes: the plaintexts (shown once) and their hashes (stored). */
  const recoveryCodes = (userId: string) => {
    const codes = Array.from({ length: RECOVERY_CODES }, newRecoveryCode);
    return { codes, hashes: codes.map((code) => recoveryCodeHash(userId, code)) };
  };

  /** A check of the second factor, for reauthenticate: throws 403 `totp_code_wrong` when refused. */
  const secondFactor = (userId: string, factor: SecondFactor) => async () => {
    if (!(await checkSecondFactor(totp, box, userId, factor))) throw codeRefused();
  };

  return {
    /** Whether TOTP is enabled for the account, since when, and how many recovery codes are left. */
    async status(userId: string) {
      const row = await totp.find(userId);
      const enabled = Boolean(row?.enabled_at);
      return {
        enabled,
        enrolled_at: row?.enabled_at?.toISOString() ?? null,
        pending: Boolean(row && !row.enabled_at),
        recovery_codes_left: enabled ? await totp.countRecoveryCodesLeft(userId) : 0,
      };
    },

    /** Starts an enrolment: a new secret (sealed at rest), its otpauth URI and QR code. 409 while TOTP is enabled. */
    async enrol(input: { userId: string; password: string; ip: string }) {
      const user = await reauthenticate(context, input.userId, input.password);
      const secret = new Secret({ size: SECRET_BYTES });
      if (!(await totp.startEnrolment(user.id, box.seal(secret.base32, purposeOf(user.id))))) {
        throw new AppError('conflict', { reason: 'totp_enabled' }, { messageKey: 'error.conflict.totp_enabled' });
      }
      const uri = new TOTP({ issuer, label: user.email, secret, digits: DIGITS, period: PERIOD_SEC, algorithm: 'SHA1' }).toString();
      const qr = qrImage({ text: uri, format: 'svg', size: 264, margin: 4, ecc: 'M' });
      // The URI fits a 264 px symbol with whole modules of 2 px or more at every secret length this issues.
      if (!qr.ok) throw new Error(`the enrolment QR code needs ${qr.minSize} px`);
      abuse.audit({ action: 'user.totp_enrolment_started', actorId: user.id, target: user.id, ip: input.ip });
      return { secret: secret.base32, otpauthUri: uri, qrSvg: `data:image/svg+xml;base64,${Buffer.from(qr.body).toString('base64')}` };
    },

    /** Enables a pending enrolment with its first code; answers the ten recovery codes (shown once). */
    async confirm(input: { userId: string; code: string; ip: string }): Promise<string[]> {
      const row = await totp.find(input.userId);
      if (!row || row.enabled_at) {
        throw new AppError(
          'conflict',
          { reason: row ? 'totp_enabled' : 'totp_not_pending' },
          { messageKey: `error.conflict.${row ? 'totp_enabled' : 'totp_not_pending'}` },
        );
      }
      const step = stepOf(box.open(row.secret, purposeOf(input.userId)), input.code);
      if (step === undefined) throw codeRefused();
      const { codes, hashes } = recoveryCodes(input.userId);
      if (!(await totp.enable(input.userId, step, hashes))) {
        throw new AppError('conflict', { reason: 'totp_enabled' }, { messageKey: 'error.conflict.totp_enabled' });
      }
      abuse.audit({ action: 'user.totp_enabled', actorId: input.userId, target: input.userId, ip: input.ip });
      return codes;
    },

    /** Disables TOTP: the password and a code or recovery code. 409 when it is not enabled. */
    async disable(input: { userId: string; password: string; factor: SecondFactor; ip: string }): Promise<void> {
      await this.assertEnabled(input.userId);
      await reauthenticate(context, input.userId, input.password, secondFactor(input.userId, input.factor));
      await totp.remove(input.userId);
      abuse.audit({ action: 'user.totp_disabled', actorId: input.userId, target: input.userId, ip: input.ip, details: { with: Object.keys(input.factor)[0] } });
    },

    /** New recovery codes, the old ones void: the password and a code or recovery code. */
    async regenerate(input: { userId: string; password: string; factor: SecondFactor; ip: string }): Promise<string[]> {
      await this.assertEnabled(input.userId);
      await reauthenticate(context, input.userId, input.password, secondFactor(input.userId, input.factor));
      const { codes, hashes } = recoveryCodes(input.userId);
      await totp.replaceRecoveryCodes(input.userId, hashes);
      abuse.audit({ action: 'user.totp_recovery_codes_regenerated', actorId: input.userId, target: input.userId, ip: input.ip });
      return codes;
    },

    /** 409 `conflict` (`totp_not_enabled`) unless the account has TOTP enabled. */
    async assertEnabled(userId: string): Promise<void> {
      if (!(await totp.isEnabled(userId))) {
        throw new AppError('conflict', { reason: 'totp_not_enabled' }, { messageKey: 'error.conflict.totp_not_enabled' });
      }
    },

    /** Whether the account is held to enrolling first (see totpEnrolmentRequired). */
    enrolmentRequired: (user: { id: string; role: string }) => totpEnrolmentRequired(context.repositories, user),
  };
}

export type TotpService = ReturnType<typeof totpService>;

/** Rows read per round of sealTotpSecrets. */
const SEAL_BATCH = 500;

/**
 * Seals with the current key every TOTP secret sealed with a previous one (a key rotation), as
 * sealWebhookSecrets does for webhooks: run at the api role's start and by scripts/reseal-secrets.ts;
 * idempotent, and a row is replaced only if it still holds the value read.
 */
export async function sealTotpSecrets(
  { totp }: { totp: Pick<TotpRepository, 'listSecretsNotSealedWith' | 'replaceSecret'> },
  box: SecretBox,
  log: Logger,
): Promise<{ sealed: number; failed: number }> {
  const current = box.currentKeyId;
  const report = { sealed: 0, failed: 0 };
  if (!current) return report;
  let after: string | undefined;
  for (;;) {
    const rows = await totp.listSecretsNotSealedWith(current, after, SEAL_BATCH);
    if (rows.length === 0) break;
    after = rows.at(-1)!.user_id;
    for (const row of rows) {
      let plaintext: string;
      try {
        plaintext = box.open(row.secret, purposeOf(row.user_id));
      } catch {
        report.failed += 1;
        continue;
      }
      if (await totp.replaceSecret(row.user_id, row.secret, box.seal(plaintext, purposeOf(row.user_id)))) report.sealed += 1;
    }
  }
  if (report.sealed > 0) log.info({ sealed: report.sealed, key_id: current }, 'TOTP secrets encrypted with the current secrets key');
  if (report.failed > 0) {
    log.error(
      { failed: report.failed, key_id: current },
      'TOTP secrets that no configured key opens: those accounts cannot sign in with a code (recovery codes still work) until the key they were sealed with is in SECRETS_KEY_PREVIOUS',
    );
  }
  return report;
}
