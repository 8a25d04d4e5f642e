import { z } from 'zod';
import type { Context } from '#shared/context.js';
import { AppError } from '#shared/errors.js';
import { defineRoute, SESSION_COOKIE, type RouteDef } from '#shared/http/route.js';
import type { Repositories } from '#services/repositories.js';

const SessionSchema = z
  .object({
    id: z.uuid().meta({ description: 'The public id of the session (DELETE /api/v1/me/sessions/{id}); not its secret.' }),
    created_at: z.iso.datetime().meta({ description: 'When it signed in.' }),
    last_seen_at: z.iso
      .datetime()
      .meta({ description: 'When it was last used, to the minute (written at most once a minute); its sign-in time until its first use.' }),
    expires_at: z.iso.datetime(),
    ip: z.string().nullable().meta({ description: 'The address it signed in from.' }),
    user_agent: z.string().nullable().meta({ description: 'The User-Agent it signed in with.' }),
    current: z.boolean().meta({ description: 'True for the session making this request.' }),
  })
  .meta({ id: 'Session' });

/** The caller's own sessions: list and revoke. */
export function sessionsRoutes(
  { config, repositories }: Pick<Context, 'config'> & { repositories: Pick<Repositories, 'sessions'> },
  audit: (entry: { action: string; actorId: string; target: string; ip: string; details?: Record<string, unknown> }) => void,
): RouteDef[] {
  const { sessions } = repositories;
  return [
    defineRoute({
      operationId: 'listSessions',
      method: 'GET',
      path: '/api/v1/me/sessions',
      summary: "The caller's signed-in sessions (not revoked, not expired), most recently used first",
      description: 'Session only (an API token is 401 `unauthorized`, `details.reason` `session_required`). `current` marks the calling session.',
      tags: ['auth'],
      auth: { kind: 'session' },
      bucket: 'api',
      response: z.object({ sessions: z.array(SessionSchema) }),
      handler: async ({ principal }) => {
        const rows = await sessions.listLive(principal!.userId, principal!.sessionHash);
        return {
          sessions: rows.map((row) => ({
            id: row.id,
            created_at: row.created_at.toISOString(),
            last_seen_at: (row.last_seen_at ?? row.created_at).toISOString(),
            expires_at: row.expires_at.toISOString(),
            ip: row.ip,
            user_agent: row.user_agent,
            current: row.current,
          })),
        };
      },
    }),
    defineRoute({
      operationId: 'revokeSession',
      method: 'DELETE',
      path: '/api/v1/me/sessions/{id}',
      summary: "Sign out one of the caller's sessions; revoking the calling one signs the caller out",
      description:
        'Session only. The session is refused from its next request. An id that is not a live session of the caller (another ' +
        "account's included, so that ids tell nothing) is 404 `not_found`. Revoking the calling session also clears the cookie " +
        '(`signed_out` true). Audited (`session.revoked`).',
      tags: ['auth'],
      auth: { kind: 'session' },
      bucket: 'api',
      params: z.object({ id: z.uuid() }),
      response: z.object({ revoked: z.literal(true), signed_out: z.boolean().meta({ description: 'True when it was the calling session.' }) }),
      errors: ['not_found'],
      handler: async ({ params, principal, request, reply }) => {
        const revokedHash = await sessions.revokeOwn(principal!.userId, params.id);
        if (!revokedHash) throw new AppError('not_found', { session: params.id });
        const signedOut = revokedHash === principal!.sessionHash;
        audit({ action: 'session.revoked', actorId: principal!.userId, target: params.id, ip: request.ip, details: { current: signedOut } });
        if (signedOut) reply.clearCookie(SESSION_COOKIE, { path: '/', httpOnly: true, sameSite: 'lax', secure: config.secureCookies });
        return { revoked: true as const, signed_out: signedOut };
      },
    }),
  ];
}
