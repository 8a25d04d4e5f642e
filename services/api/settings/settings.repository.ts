import type { Kysely } from 'kysely';
import type { DB } from '#shared/db/schema.js';

/** Platform-wide security settings staff change through the API, with their defaults. */
export interface SecuritySettings {
  /** Staff accounts must sign in with TOTP: one without is held to enrolling until it has. */
  require_totp_for_staff: boolean;
}

export const SECURITY_DEFAULTS: SecuritySettings = { require_totp_for_staff: false };

const SECURITY = 'security';

/** SQL for platform settings: the only place that queries platform_settings. */
export function settingsRepository(db: Kysely<DB>) {
  return {
    /** The security settings: the stored ones over the defaults. */
    async security(): Promise<SecuritySettings> {
      const row = await db.selectFrom('platform_settings').select('value').where('name', '=', SECURITY).executeTakeFirst();
      return { ...SECURITY_DEFAULTS, ...(row?.value as Partial<SecuritySettings> | undefined) };
    },
    /** Stores the security settings as a whole. */
    async setSecurity(value: SecuritySettings, updatedBy: string): Promise<void> {
      const json = JSON.stringify(value);
      await db
        .insertInto('platform_settings')
        .values({ name: SECURITY, value: json, updated_by: updatedBy })
        .onConflict((conflict) => conflict.column('name').doUpdateSet({ value: json, updated_by: updatedBy, updated_at: new Date() }))
        .execute();
    },
  };
}

export type SettingsRepository = ReturnType<typeof settingsRepository>;
