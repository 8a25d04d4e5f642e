import { z } from 'zod';
import { defineRoute, type RouteDef } from '#shared/http/route.js';
import type { AuditEntry } from '#shared/audit/audit.repository.js';
import type { Repositories } from '#services/repositories.js';

const SecuritySettingsSchema = z
  .object({
    require_totp_for_staff: z.boolean().meta({
      description:
        'Staff accounts must sign in with TOTP. A staff account without it is then signed in held to enrolling: its sessions reach ' +
        'only GET /api/v1/me, /api/v1/me/totp, POST /api/v1/me/totp/confirm and POST /auth/logout until it has turned TOTP on ' +
        '(other routes answer 403 `forbidden`, `details.reason` `totp_enrolment_required`), its sessions open before the change ' +
        'included. API tokens are not affected.',
    }),
  })
  .meta({ id: 'SecuritySettings' });

/** Platform-wide security settings (staff only). */
export function settingsRoutes({ settings }: Pick<Repositories, 'settings'>, audit: (entry: AuditEntry) => void): RouteDef[] {
  return [
    defineRoute({
      operationId: 'getSecuritySettings',
      method: 'GET',
      path: '/api/v1/settings/security',
      summary: 'The platform-wide security settings (staff only: a staff session, or a token with the admin scope)',
      tags: ['users'],
      auth: { kind: 'scope', scope: 'admin' },
      bucket: 'api',
      response: SecuritySettingsSchema,
      handler: async () => settings.security(),
    }),
    defineRoute({
      operationId: 'updateSecuritySettings',
      method: 'PATCH',
      path: '/api/v1/settings/security',
      summary: 'Change the platform-wide security settings (staff only: a staff session, or a token with the admin scope)',
      description: 'Fields left out keep their value. Audited (`settings.security_changed`, with the values before and after).',
      tags: ['users'],
      auth: { kind: 'scope', scope: 'admin' },
      bucket: 'api',
      body: SecuritySettingsSchema.partial().strict(),
      response: SecuritySettingsSchema,
      handler: async ({ body, principal, request }) => {
        const before = await settings.security();
        const after = { ...before, ...body };
        await settings.setSecurity(after, principal!.userId);
        audit({ action: 'settings.security_changed', actorId: principal!.userId, target: 'security', ip: request.ip, details: { before, after } });
        return after;
      },
    }),
  ];
}
