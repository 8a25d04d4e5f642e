import { ConfigError } from '#shared/config.js';
import type { Context } from '#shared/context.js';
import { generatePassword, hashPassword, isWeakPassword } from '#shared/password.js';
import type { Repositories } from '#services/repositories.js';

export interface BootstrapResult {
  created: boolean;
  email?: string;
  /** Set only when the password was generated: the caller prints it once. */
  generatedPassword?: string;
}

/**
 * On first start with no users, creates the staff admin from ADMIN_EMAIL/ADMIN_PASSWORD, or with a
 * generated password. Safe when several nodes start at once: the unique e-mail index decides. A
 * common or easily guessed ADMIN_PASSWORD stops the start (ConfigError) rather than guard the admin.
 */
export async function bootstrapAdmin(context: Pick<Context, 'config'> & { repositories: Pick<Repositories, 'users'> }): Promise<BootstrapResult> {
  const { users } = context.repositories;
  if ((await users.count()) > 0) return { created: false };
  const email = context.config.admin.email ?? `admin@${context.config.baseDomain}`;
  const configured = context.config.admin.password;
  if (configured && (await isWeakPassword(configured, [email]))) {
    throw new ConfigError(
      'invalid configuration: ADMIN_PASSWORD is too common or too easy to guess (zxcvbn score below 3): choose a longer phrase of unrelated words',
    );
  }
  const generatedPassword = configured ? undefined : generatePassword();
  const passwordHash = await hashPassword(context.config.admin.password ?? generatedPassword!);
  const id = await users.insertIfAbsent({ email, passwordHash, role: 'staff', displayName: 'Administrator' });
  if (!id) return { created: false };
  return { created: true, email, generatedPassword };
}
