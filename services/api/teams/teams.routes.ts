import { z } from 'zod';
import { cursorParam, pageByTime, PageMetaSchema, PAGINATION_NOTE, pagingOf, pagingQuery, TIME_CURSOR } from '#shared/http/pagination.js';
import { textField } from '#shared/http/fields.js';
import { defineRoute, type RouteDef } from '#shared/http/route.js';
import { rule } from '#shared/i18n/index.js';
import { TEAM_ROLES } from './roles.js';
import { TEAM_AUDIT_LIMIT, type TeamsService } from './teams.service.js';

const tags = ['teams'];

const RoleSchema = z
  .enum(TEAM_ROLES)
  .meta({ description: 'owner (all, renaming and deleting the team included), admin (members, invitations), editor, viewer.' });

const TeamSchema = z
  .object({
    id: z.uuid(),
    name: z.string(),
    role: RoleSchema.meta({ description: "The caller's role in the team (staff holding `admin` act as an owner of every team)." }),
    members: z.number().int().min(1),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'Team' });

const MemberSchema = z
  .object({
    id: z.uuid().meta({ description: "The member's account id." }),
    email: z.string(),
    display_name: z.string().nullable(),
    role: RoleSchema,
    created_at: z.iso.datetime().meta({ description: 'When the account joined the team.' }),
  })
  .meta({ id: 'TeamMember' });

const InvitationSchema = z
  .object({
    id: z.uuid(),
    team_id: z.uuid(),
    email: z.string(),
    role: RoleSchema,
    invited_by: z.uuid().nullable(),
    created_at: z.iso.datetime(),
    expires_at: z.iso.datetime(),
    accepted_at: z.iso.datetime().nullable(),
    revoked_at: z.iso.datetime().nullable(),
    state: z.enum(['pending', 'expired', 'accepted', 'revoked']),
  })
  .meta({ id: 'TeamInvitation' });

const AuditEntrySchema = z
  .object({
    id: z.string(),
    action: z
      .string()
      .meta({ description: 'A `team.*` action, or `subdomain.team_assigned` / `subdomain.team_unassigned`.', example: 'team.member_role_changed' }),
    actor_id: z.uuid().nullable().meta({ description: 'The account that made the change (null once it is erased).' }),
    actor_email: z.string().nullable().meta({ description: "That account's address, while the account exists." }),
    details: z.record(z.string(), z.unknown()).meta({
      description:
        'What the change was about. A member entry (`team.member_role_changed`, `team.member_removed`, `team.member_left`) names the member: `user_id` and `email` (the address at the time).',
    }),
    created_at: z.iso.datetime(),
  })
  .meta({ id: 'TeamAuditEntry' });

const TeamParams = z.object({ id: z.uuid() });
const page = { ...pagingQuery, cursor: cursorParam(TIME_CURSOR) };

const ROLE_RULES =
  'Unknown team: 404 `not_found`; a team the caller is not a member of: 403 `not_owner`; a role too narrow: 403 `forbidden` ' +
  "(`details.reason` `team_role_too_low`, with the caller's `role` and the `required_role`).";

/** Team endpoints: teams, their members and invitations. Reads take `team:read`; changes take a session. */
export function teamsRoutes(service: TeamsService): RouteDef[] {
  return [
    defineRoute({
      operationId: 'createTeam',
      method: 'POST',
      path: '/api/v1/teams',
      summary: 'Create a team; the caller is its owner',
      description: 'Any signed-in account (a session) creates a team and becomes its first owner. Audited (`team.created`).',
      tags,
      auth: { kind: 'session' },
      bucket: 'api',
      body: z.strictObject({ name: textField(100) }),
      response: TeamSchema,
      status: 201,
      links: {
        GetTeam: { operationId: 'getTeam', parameters: { id: '$response.body#/data/id' } },
        ListTeamMembers: { operationId: 'listTeamMembers', parameters: { id: '$response.body#/data/id' } },
      },
      handler: async ({ principal, body, request }) => service.create({ principal: principal!, ip: request.ip }, body.name),
    }),
    defineRoute({
      operationId: 'listTeams',
      method: 'GET',
      path: '/api/v1/teams',
      summary: "List the caller's teams, with its role in each",
      description: 'The teams the caller is a member of (scope `team:read`). ' + PAGINATION_NOTE,
      tags,
      auth: { kind: 'scope', scope: 'team:read' },
      bucket: 'api',
      query: z.object(page),
      response: z.object({ teams: z.array(TeamSchema) }),
      meta: PageMetaSchema,
      handler: async ({ principal, query, respond }) => {
        const paged = pageByTime(await service.list(principal!), pagingOf(query));
        respond.meta(paged.meta);
        return { teams: paged.items };
      },
    }),
    defineRoute({
      operationId: 'getTeam',
      method: 'GET',
      path: '/api/v1/teams/{id}',
      summary: 'A team the caller is a member of',
      description: `Any member (scope \`team:read\`). ${ROLE_RULES}`,
      tags,
      auth: { kind: 'scope', scope: 'team:read' },
      bucket: 'api',
      params: TeamParams,
      response: TeamSchema,
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, params }) => service.get(principal!, params.id),
    }),
    defineRoute({
      operationId: 'renameTeam',
      method: 'PATCH',
      path: '/api/v1/teams/{id}',
      summary: 'Rename a team (owners)',
      description: `Owners only, by session. Audited (\`team.renamed\`). ${ROLE_RULES}`,
      tags,
      auth: { kind: 'session' },
      bucket: 'api',
      params: TeamParams,
      body: z.strictObject({ name: textField(100) }),
      response: TeamSchema,
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, params, body, request }) => service.rename({ principal: principal!, ip: request.ip }, params.id, body.name),
    }),
    defineRoute({
      operationId: 'deleteTeam',
      method: 'DELETE',
      path: '/api/v1/teams/{id}',
      summary: 'Delete a team with its memberships and invitations (owners)',
      description: `Owners only, by session. Not undoable. Audited (\`team.deleted\`). ${ROLE_RULES}`,
      tags,
      auth: { kind: 'session' },
      bucket: 'api',
      params: TeamParams,
      response: z.object({ id: z.uuid(), deleted: z.literal(true) }),
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, params, request }) => service.delete({ principal: principal!, ip: request.ip }, params.id),
    }),
    defineRoute({
      operationId: 'listTeamMembers',
      method: 'GET',
      path: '/api/v1/teams/{id}/members',
      summary: "A team's members and their roles",
      description: `Any member (scope \`team:read\`). ${ROLE_RULES} ${PAGINATION_NOTE}`,
      tags,
      auth: { kind: 'scope', scope: 'team:read' },
      bucket: 'api',
      params: TeamParams,
      query: z.object(page),
      response: z.object({ members: z.array(MemberSchema) }),
      meta: PageMetaSchema,
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, params, query, respond }) => {
        const paged = pageByTime(await service.members(principal!, params.id), pagingOf(query));
        respond.meta(paged.meta);
        return { members: paged.items };
      },
    }),
    defineRoute({
      operationId: 'listTeamAudit',
      method: 'GET',
      path: '/api/v1/teams/{id}/audit',
      summary: "A team's audit log, newest first (admins)",
      description: `Admins and owners (scope \`team:read\`): every change to the team, its members, invitations and subdomains, with who made it; never an IP address. The newest ${TEAM_AUDIT_LIMIT} entries; entries are pruned with the audit log's retention. ${ROLE_RULES} ${PAGINATION_NOTE}`,
      tags,
      auth: { kind: 'scope', scope: 'team:read' },
      bucket: 'api',
      params: TeamParams,
      query: z.object(page),
      response: z.object({ entries: z.array(AuditEntrySchema) }),
      meta: PageMetaSchema,
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, params, query, respond }) => {
        const paged = pageByTime(await service.audit(principal!, params.id), pagingOf(query));
        respond.meta(paged.meta);
        return { entries: paged.items };
      },
    }),
    defineRoute({
      operationId: 'updateTeamMember',
      method: 'PATCH',
      path: '/api/v1/teams/{id}/members/{user_id}',
      summary: "Change a member's role (admins; owners for owners)",
      description:
        'By session. Admins change the roles of admins, editors and viewers; only an owner makes an owner or changes an ' +
        "owner's role. The last owner cannot be demoted: 409 `conflict` (`details.reason` `last_team_owner`). A member " +
        `unknown to the team: 404. Audited (\`team.member_role_changed\`). ${ROLE_RULES}`,
      tags,
      auth: { kind: 'session' },
      bucket: 'api',
      params: z.object({ id: z.uuid(), user_id: z.uuid() }),
      body: z.strictObject({ role: RoleSchema }),
      response: MemberSchema,
      errors: ['not_found', 'not_owner', 'conflict'],
      handler: async ({ principal, params, body, request }) => service.setRole({ principal: principal!, ip: request.ip }, params.id, params.user_id, body.role),
    }),
    defineRoute({
      operationId: 'removeTeamMember',
      method: 'DELETE',
      path: '/api/v1/teams/{id}/members/{user_id}',
      summary: 'Remove a member, or leave the team (own id)',
      description:
        "By session. Any member leaves with its own id; admins remove admins, editors and viewers; only an owner removes an owner. The last owner can neither leave nor be removed: 409 `conflict` (`last_team_owner`); nor can a member owning subdomains of the team until they are taken back (409, `team_subdomains`). Access ends from the removed account's next request. " +
        `Audited (\`team.member_removed\`, \`team.member_left\`). ${ROLE_RULES}`,
      tags,
      auth: { kind: 'session' },
      bucket: 'api',
      params: z.object({ id: z.uuid(), user_id: z.uuid() }),
      response: z.object({ id: z.uuid(), removed: z.literal(true) }),
      errors: ['not_found', 'not_owner', 'conflict'],
      handler: async ({ principal, params, request }) => service.removeMember({ principal: principal!, ip: request.ip }, params.id, params.user_id),
    }),
    defineRoute({
      operationId: 'createTeamInvitation',
      method: 'POST',
      path: '/api/v1/teams/{id}/invitations',
      summary: 'Invite an e-mail address into the team (admins; owners for owners)',
      description:
        'By session. The invitation link is valid 7 days and works once; only the SHA-256 of its secret is stored. It is mailed ' +
        'through SMTP_URL (`mailed: true`, `link: null`); without SMTP_URL, or when the mail fails, it is answered here ' +
        'instead (`mailed: false`, `link`), for the inviter to pass on. An address already a member, or with a pending ' +
        'invitation, is 409 `conflict` (`already_member`, `invitation_pending`); an expired one is replaced. At most 100 ' +
        `members and pending invitations per team (403 \`forbidden\`, \`limit_reached\`). Audited (\`team.invitation_created\`). ${ROLE_RULES}`,
      tags,
      auth: { kind: 'session' },
      bucket: 'api',
      params: TeamParams,
      body: z.strictObject({
        email: z.string().max(254).regex(z.regexes.email, rule('email')).meta({ example: 'someone@example.com' }),
        role: RoleSchema,
      }),
      response: InvitationSchema.extend({
        mailed: z.boolean(),
        link: z.string().nullable().meta({ description: 'The invitation link, when it was not mailed; shown this once.' }),
      }),
      status: 201,
      errors: ['not_found', 'not_owner', 'conflict'],
      links: {
        RevokeTeamInvitation: {
          operationId: 'revokeTeamInvitation',
          parameters: { id: '$response.body#/data/team_id', invitation_id: '$response.body#/data/id' },
        },
      },
      handler: async ({ principal, params, body, request, locale }) => service.invite({ principal: principal!, ip: request.ip }, params.id, body, locale),
    }),
    defineRoute({
      operationId: 'listTeamInvitations',
      method: 'GET',
      path: '/api/v1/teams/{id}/invitations',
      summary: "A team's open invitations (pending and expired; admins)",
      description: `Admins and owners (scope \`team:read\`); never a link or its hash. ${ROLE_RULES} ${PAGINATION_NOTE}`,
      tags,
      auth: { kind: 'scope', scope: 'team:read' },
      bucket: 'api',
      params: TeamParams,
      query: z.object(page),
      response: z.object({ invitations: z.array(InvitationSchema) }),
      meta: PageMetaSchema,
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, params, query, respond }) => {
        const paged = pageByTime(await service.invitations(principal!, params.id), pagingOf(query));
        respond.meta(paged.meta);
        return { invitations: paged.items };
      },
    }),
    defineRoute({
      operationId: 'revokeTeamInvitation',
      method: 'DELETE',
      path: '/api/v1/teams/{id}/invitations/{invitation_id}',
      summary: 'Revoke an invitation (admins); its link stops working',
      description: `By session. Revoking twice, or an accepted invitation, changes nothing. Audited (\`team.invitation_revoked\`). ${ROLE_RULES}`,
      tags,
      auth: { kind: 'session' },
      bucket: 'api',
      params: z.object({ id: z.uuid(), invitation_id: z.uuid() }),
      response: InvitationSchema,
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, params, request }) => service.revokeInvitation({ principal: principal!, ip: request.ip }, params.id, params.invitation_id),
    }),
    defineRoute({
      operationId: 'acceptTeamInvitation',
      method: 'POST',
      path: '/api/v1/invitations/accept',
      summary: 'Accept a team invitation as the signed-in invitee',
      description:
        'By session, of the account with the invited address (case-insensitive). The secret is sent in the body, not the path, so that no access log keeps it. Refusals: an unknown link 404 `not_found`; one used, revoked, expired or for another address 403 `forbidden` (`details.reason` `invitation_used`, `invitation_revoked`, `invitation_expired`, `invitation_other_address`); an account already a member 409 `conflict` (`already_member`). Audited (`team.invitation_accepted`).',
      tags,
      auth: { kind: 'session' },
      bucket: 'api',
      body: z.strictObject({ token: z.string().min(1).max(100).meta({ description: 'The secret of the link (after `#token=`).' }) }),
      response: TeamSchema,
      errors: ['not_found', 'conflict'],
      handler: async ({ principal, body, request }) => service.accept({ principal: principal!, ip: request.ip }, body.token),
    }),
  ];
}
