import { z } from 'zod';
import { textField } from '#shared/http/fields.js';
import { AppError } from '#shared/errors.js';
import { collectionMeta, cursorParam, PageMetaSchema, PAGINATION_NOTE, pageByTime, pagingOf, pagingQuery, TIME_CURSOR } from '#shared/http/pagination.js';
import { defineRoute, type RouteDef } from '#shared/http/route.js';
import { hashPassword, isWeakPassword } from '#shared/password.js';
import type { Repositories } from '#services/repositories.js';
import { USER_AUDIT_LIMIT, type UsersService } from './users.service.js';
import { DeletedUserSchema, toUserView } from './users.view.js';
import { rule } from '#shared/i18n/index.js';

export const UserSchema = z
  .object({
    id: z.uuid(),
    email: z.string(),
    role: z.enum(['staff', 'user']),
    display_name: z.string().nullable(),
    created_at: z.iso.datetime(),
    disabled: z.boolean().meta({ description: 'True while staff have disabled the account (PATCH /api/v1/users/{id}).' }),
    disabled_at: z.iso.datetime().nullable().meta({ description: 'When the account was disabled; null while it is active.' }),
  })
  .meta({ id: 'User' });

const DISABLE_NOTE =
  'A staff session, or a token with the admin scope. `disabled: true` disables the account: on their very next request its ' +
  'sessions and API tokens answer 401 `unauthorized` with `details.reason` `account_disabled` (on every API process: tokens ' +
  'cached in memory are read again), it cannot sign in (401 `account_disabled`, told only to a caller who gave the right ' +
  'password), and no reset link can be issued, mailed or used for it (its open links are spent). Its links keep redirecting: ' +
  'to stop them, staff expire or delete them (PATCH or DELETE /api/v1/links/{id} with the admin scope). `disabled: false` ' +
  're-enables it: it can sign in again and its API tokens work again, but the sessions it had stay signed out. Staff cannot ' +
  'disable their own account (409 `conflict`, `details.reason` `cannot_disable_self`) nor the last active staff account ' +
  '(409, `last_active_staff`). Setting the state the account already has changes nothing. Audited (`user.disabled`, ' +
  '`user.enabled`). An unknown id is 404 `not_found`; a caller without the admin scope is 403 `forbidden`.';

const UserAuditEntrySchema = z
  .object({
    id: z.string(),
    action: z.string().meta({
      description:
        'What happened, e.g. `user.password_changed`, `user.password_reset_requested`, `user.password_reset_issued`, `user.password_reset`, ' +
        '`user.totp_enabled`, `user.totp_disabled`, `auth.recovery_code_used`, `session.revoked`, `user.disabled`, `user.enabled`, `user.deleted`.',
      example: 'user.disabled',
    }),
    actor_id: z.uuid().nullable().meta({ description: 'The account that acted (null for the platform, or once that account is deleted).' }),
    actor_email: z.string().nullable().meta({ description: "That account's address, while the account exists." }),
    target: z.string().nullable().meta({ description: 'What the action was about: an account id, a session id, a team id, …' }),
    ip: z.string().nullable().meta({ description: 'The address the action came from, when there was one.' }),
    details: z.record(z.string(), z.unknown()),
    created_at: z.iso.datetime(),
  })
  .meta({ id: 'UserAuditEntry' });

/** A users cursor is opaque: a version tag and the id of the last account of the previous page (an unknown id: an empty page). */
const encodeCursor = (id: string) => `u1.${id}`;
const USER_CURSOR = /^u1\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Accounts: staff create users (so that tests and scripts can set up several owners), list, disable and re-enable them. */
export function usersRoutes({ users }: Pick<Repositories, 'users'>, service: UsersService): RouteDef[] {
  return [
    defineRoute({
      operationId: 'listUsers',
      method: 'GET',
      path: '/api/v1/users',
      summary: 'List the accounts, newest first (staff only: a staff session, or a token with the admin scope)',
      description: PAGINATION_NOTE,
      tags: ['users'],
      auth: { kind: 'scope', scope: 'admin' },
      bucket: 'api',
      query: z.object({ ...pagingQuery, cursor: cursorParam(USER_CURSOR) }),
      response: z.object({ users: z.array(UserSchema) }),
      meta: PageMetaSchema,
      handler: async ({ query, respond }) => {
        const paging = pagingOf(query);
        const at = paging.page !== undefined ? { offset: (paging.page - 1) * paging.limit } : { afterId: paging.cursor?.slice('u1.'.length) };
        const [rows, total] = await Promise.all([users.listPage(paging.limit + 1, at), users.count()]);
        const page = rows.slice(0, paging.limit);
        const next = rows.length > paging.limit ? encodeCursor(page.at(-1)!.id) : null;
        respond.meta(collectionMeta(page.length, total, paging, next));
        return { users: page.map(toUserView) };
      },
    }),
    defineRoute({
      operationId: 'createUser',
      method: 'POST',
      path: '/api/v1/users',
      summary: 'Create an account (staff only: a staff session, or a token with the admin scope)',
      tags: ['users'],
      auth: { kind: 'scope', scope: 'admin' },
      bucket: 'api',
      body: z.strictObject({
        email: z.string().max(254).regex(z.regexes.email, rule('email')),
        password: z
          .string()
          .min(12)
          .max(256)
          .meta({
            description:
              'At least 12 characters, and not common or easy to guess (NIST SP 800-63B): a password of the breached-password lists ' +
              'zxcvbn-ts ships, or derived from one or from the e-mail (zxcvbn score below 3), is 409 `conflict` with `details.password` ' +
              "(as a reserved subdomain name: a rule of the server's lists, which no schema states; 422 stays for what the schema says).",
          }),
        role: z.enum(['staff', 'user']).default('user'),
        display_name: textField(100).optional(),
      }),
      response: UserSchema,
      status: 201,
      errors: ['conflict'],
      handler: async ({ body }) => {
        if (await isWeakPassword(body.password, [body.email, body.display_name ?? ''])) {
          throw new AppError('conflict', { password: rule('password_common') }, { messageKey: 'error.conflict.password_common' });
        }
        const id = await users.insertIfAbsent({
          email: body.email,
          passwordHash: await hashPassword(body.password),
          role: body.role,
          displayName: body.display_name,
        });
        if (!id) throw new AppError('conflict', { email: rule('already_registered') });
        return toUserView((await users.findById(id))!);
      },
    }),
    defineRoute({
      operationId: 'updateUser',
      method: 'PATCH',
      path: '/api/v1/users/{id}',
      summary: 'Disable or re-enable an account (staff only)',
      description: DISABLE_NOTE,
      tags: ['users'],
      auth: { kind: 'scope', scope: 'admin' },
      bucket: 'api',
      params: z.object({ id: z.uuid() }),
      body: z.strictObject({
        disabled: z.boolean().meta({ description: 'true disables the account, false re-enables it.', example: true }),
      }),
      response: UserSchema,
      errors: ['not_found', 'conflict'],
      handler: async ({ params, body, principal, request }) => service.setDisabled(principal!, params.id, body.disabled, request.ip),
    }),
    defineRoute({
      operationId: 'listUserAudit',
      method: 'GET',
      path: '/api/v1/users/{id}/audit',
      summary: "An account's audit trail, newest first (staff only)",
      description:
        'A staff session, or a token with the admin scope. The audit entries the account made and those about it: its password ' +
        'changes and resets, reset links asked for or issued by staff, TOTP changes and recovery codes used, sessions revoked, and ' +
        "staff's disabling, re-enabling and deletion of it, each with the actor, the target, the IP address and the details. The " +
        `newest ${USER_AUDIT_LIMIT} entries; entries are pruned after AUDIT_RETENTION_DAYS. A deleted account's trail stays readable ` +
        'by its id; an id with neither an account nor an entry is 404 `not_found`; a caller without the admin scope is 403 `forbidden`. ' +
        PAGINATION_NOTE,
      tags: ['users'],
      auth: { kind: 'scope', scope: 'admin' },
      bucket: 'api',
      params: z.object({ id: z.uuid() }),
      query: z.object({ ...pagingQuery, cursor: cursorParam(TIME_CURSOR) }),
      response: z.object({ entries: z.array(UserAuditEntrySchema) }),
      meta: PageMetaSchema,
      errors: ['not_found'],
      handler: async ({ params, query, respond }) => {
        const paged = pageByTime(await service.audit(params.id), pagingOf(query));
        respond.meta(paged.meta);
        return { entries: paged.items };
      },
    }),
    defineRoute({
      operationId: 'listOwnAudit',
      method: 'GET',
      path: '/api/v1/me/audit',
      summary: "The caller's own account activity (its audit trail), newest first",
      description:
        'Session only (an API token is 401 `unauthorized`, `details.reason` `session_required`). The audit entries the account ' +
        'made and those about it, as staff read them with GET /api/v1/users/{id}/audit: password changes and resets, reset links, ' +
        'TOTP changes, recovery codes used, sessions revoked, and staff disabling or re-enabling the account. An entry made by ' +
        'another account says `by: "staff"` and carries neither its identity, its IP address nor its details; the caller\'s own ' +
        `entries carry their IP address and details. The newest ${USER_AUDIT_LIMIT} entries. ` +
        PAGINATION_NOTE,
      tags: ['auth'],
      auth: { kind: 'session' },
      bucket: 'api',
      query: z.object({ ...pagingQuery, cursor: cursorParam(TIME_CURSOR) }),
      response: z.object({
        entries: z.array(
          z
            .object({
              id: z.string(),
              action: z.string().meta({ example: 'user.password_changed' }),
              by: z.enum(['self', 'staff', 'platform']).meta({ description: 'Who acted: this account, staff, or the platform itself.' }),
              ip: z.string().nullable().meta({ description: 'The address of an action of this account; null for the others.' }),
              details: z.record(z.string(), z.unknown()),
              created_at: z.iso.datetime(),
            })
            .meta({ id: 'OwnAuditEntry' }),
        ),
      }),
      meta: PageMetaSchema,
      handler: async ({ principal, query, respond }) => {
        const paged = pageByTime(await service.ownAudit(principal!.userId), pagingOf(query));
        respond.meta(paged.meta);
        return { entries: paged.items };
      },
    }),
    defineRoute({
      operationId: 'deleteUser',
      method: 'DELETE',
      path: '/api/v1/users/{id}',
      summary: 'Delete an account with its links, tokens, webhooks, sessions and raw visits (staff only)',
      description:
        'A staff session, or a token with the admin scope. First waits (up to 30 s) until the enricher has stored what the message ' +
        'log held, as an erasure does (else 503 `service_unavailable`, nothing deleted). Deletes the raw visits of the account ' +
        '(ClickHouse `visits` and beacon states) and the dead letters that name it, then the account and, with it, its sessions, API tokens, subdomains (their names become free), links (they stop ' +
        'redirecting: every edge drops them within moments), webhooks with their delivery log, notifications and two-factor ' +
        'settings. Audit rows stay, their actor emptied; the deletion is audited (`user.deleted`, with the counts). Not undoable: ' +
        'export first (GET /api/v1/export as the account, or as staff with `link_id` or `subdomain`; GET /api/v1/links), or ' +
        'disable the account instead (PATCH /api/v1/users/{id} with `disabled: true`). One’s own account is 409 `conflict` ' +
        '(`cannot_delete_self`). An unknown id is 404 `not_found`; a caller without the admin scope is 403 `forbidden`. ' +
        'An account that is the only owner of a team with other members is 409 `conflict` (`last_team_owner`, `details.teams` ' +
        'naming them), checked before anything is deleted: another member is made an owner first, or the team deleted. The teams ' +
        'the account is the only member of are deleted with it (`teams`). An account owning a subdomain that a team with other ' +
        'members works on is 409 `conflict` (`team_subdomains`, `details.subdomains` naming them), also before anything is deleted: ' +
        'the subdomain is taken back from the team (DELETE /api/v1/subdomains/{name}/team) first.',
      tags: ['users'],
      auth: { kind: 'scope', scope: 'admin' },
      bucket: 'api',
      params: z.object({ id: z.uuid() }),
      response: DeletedUserSchema,
      errors: ['not_found', 'conflict', 'service_unavailable'],
      handler: async ({ params, principal, request }) => service.delete(principal!, params.id, request.ip, request.id),
    }),
  ];
}
