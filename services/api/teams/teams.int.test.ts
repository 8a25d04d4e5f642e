import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditRepository } from '#shared/audit/audit.repository.js';
import type { Context } from '#shared/context.js';
import { createAccount, loginCookie, mintToken, TEST_PASSWORD } from '#tests/support/accounts.js';
import { closeContext, createTestContext, testConfig } from '#tests/support/context.js';
import { startSmtpServer } from '#tests/support/smtp.js';
import { waitFor } from '#tests/support/wait.js';
import { buildApp } from '#services/app.js';

// Teams through the real HTTP app on the real store (PGlite, or Postgres and Redis in the services
// run): teams, roles, invitations (mailed by a local SMTP server, or answered without SMTP_URL),
// the last owner's rule, and the audit trail.

let context: Context;
let app: FastifyInstance;
let mailingApp: FastifyInstance;
let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
let origin: string;

beforeAll(async () => {
  smtp = await startSmtpServer();
  context = await createTestContext({ SMTP_URL: undefined });
  app = (await buildApp(context)).app;
  mailingApp = (await buildApp({ ...context, config: testConfig({ SMTP_URL: smtp.url }) })).app;
  origin = new URL(context.config.publicUrl).origin;
});

afterAll(async () => {
  await app?.close();
  await mailingApp?.close();
  smtp?.close();
  await closeContext(context);
});

const ip = () => `192.0.2.${Math.floor(Math.random() * 250) + 1}`;

interface Person {
  id: string;
  email: string;
  cookie: string;
}

async function person(role: 'staff' | 'user' = 'user'): Promise<Person> {
  const account = await createAccount(context, role);
  return { ...account, cookie: await loginCookie(app, account.email, TEST_PASSWORD, ip()) };
}

type Caller = Person | { token: string };
const headersOf = (caller: Caller) => ('token' in caller ? { authorization: `Bearer ${caller.token}` } : { cookie: caller.cookie, origin });

const call = (caller: Caller, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: Record<string, unknown>, on = app) =>
  on.inject({ method, url, headers: headersOf(caller), ...(payload ? { payload } : {}) });

async function createTeam(owner: Person, name = 'Marketing'): Promise<string> {
  const response = await call(owner, 'POST', '/api/v1/teams', { name });
  expect(response.statusCode).toBe(201);
  return response.json().data.id;
}

/** Invites the person (no SMTP: the link is answered) and has them accept it. */
async function join(teamId: string, inviter: Person, invitee: Person, role: string): Promise<void> {
  const invited = await call(inviter, 'POST', `/api/v1/teams/${teamId}/invitations`, { email: invitee.email, role });
  expect(invited.statusCode, invited.body).toBe(201);
  const accepted = await call(invitee, 'POST', '/api/v1/invitations/accept', { token: secretOf(invited.json().data.link) });
  expect(accepted.statusCode, accepted.body).toBe(200);
}

const secretOf = (link: string) => new URL(link).hash.replace(/^#token=/, '');

/** A team with one member of each role. */
async function staffedTeam() {
  const owner = await person();
  const admin = await person();
  const editor = await person();
  const viewer = await person();
  const teamId = await createTeam(owner);
  await join(teamId, owner, admin, 'admin');
  await join(teamId, owner, editor, 'editor');
  await join(teamId, owner, viewer, 'viewer');
  return { teamId, owner, admin, editor, viewer };
}

/** The audit entries of one action on the team, once there is one (audit entries are written behind the answer). */
const audited = (teamId: string, action: string) =>
  waitFor(
    async () => {
      const rows = (await auditRepository(context.db.db).list({ action, limit: 1000 })).filter((row) => row.target === teamId);
      return rows.length > 0 ? rows : undefined;
    },
    5000,
    { message: `${action} audited` },
  );

describe('teams', () => {
  it('creates a team whose creator is its owner, listed with the role; audited (team.created)', async () => {
    const owner = await person();
    const created = await call(owner, 'POST', '/api/v1/teams', { name: '  Sales  ' });
    expect(created.statusCode).toBe(201);
    const team = created.json().data;
    expect(team).toMatchObject({ name: 'Sales', role: 'owner', members: 1 });
    const listed = await call(owner, 'GET', '/api/v1/teams');
    expect(listed.json().data.teams).toEqual([team]);
    expect((await call(owner, 'GET', `/api/v1/teams/${team.id}`)).json().data).toEqual(team);
    const [entry] = await audited(team.id, 'team.created');
    expect(entry).toMatchObject({ actor_id: owner.id, details: { team_id: team.id, name: 'Sales' } });
  });

  it('answers 404 for an unknown team and 403 not_owner for a team the caller is not a member of', async () => {
    const owner = await person();
    const stranger = await person();
    const teamId = await createTeam(owner);
    expect((await call(stranger, 'GET', '/api/v1/teams/00000000-0000-4000-8000-000000000000')).statusCode).toBe(404);
    const foreign = await call(stranger, 'GET', `/api/v1/teams/${teamId}`);
    expect(foreign.statusCode).toBe(403);
    expect(foreign.json().error.code).toBe('not_owner');
    expect((await call(stranger, 'GET', `/api/v1/teams/${teamId}/members`)).json().error.code).toBe('not_owner');
    expect((await call(stranger, 'PATCH', `/api/v1/teams/${teamId}`, { name: 'Mine' })).json().error.code).toBe('not_owner');
    expect((await call(stranger, 'GET', '/api/v1/teams')).json().data.teams).toEqual([]);
  });

  it('lets only owners rename and delete a team; deleting removes memberships and invitations (audited)', async () => {
    const { teamId, owner, admin, editor, viewer } = await staffedTeam();
    for (const member of [admin, editor, viewer]) {
      const renamed = await call(member, 'PATCH', `/api/v1/teams/${teamId}`, { name: 'Taken' });
      expect(renamed.statusCode).toBe(403);
      expect(renamed.json().error).toMatchObject({ code: 'forbidden', details: { reason: 'team_role_too_low', required_role: 'owner' } });
      expect((await call(member, 'DELETE', `/api/v1/teams/${teamId}`)).statusCode).toBe(403);
    }
    const renamed = await call(owner, 'PATCH', `/api/v1/teams/${teamId}`, { name: 'Growth' });
    expect(renamed.json().data).toMatchObject({ name: 'Growth', members: 4 });
    expect(await audited(teamId, 'team.renamed')).toMatchObject([{ details: { from: 'Marketing', to: 'Growth' } }]);
    const pending = await call(owner, 'POST', `/api/v1/teams/${teamId}/invitations`, { email: 'later@example.test', role: 'viewer' });
    expect((await call(owner, 'DELETE', `/api/v1/teams/${teamId}`)).json().data).toEqual({ id: teamId, deleted: true });
    expect((await call(admin, 'GET', `/api/v1/teams/${teamId}`)).statusCode).toBe(404);
    expect((await call(viewer, 'GET', '/api/v1/teams')).json().data.teams).toEqual([]);
    expect(await context.db.db.selectFrom('team_invitations').selectAll().where('id', '=', pending.json().data.id).execute()).toEqual([]);
    await audited(teamId, 'team.deleted');
  });
});

describe('staff', () => {
  it('act as an owner of every team with the admin scope, and see no team without it', async () => {
    const owner = await person();
    const staff = await person('staff');
    const teamId = await createTeam(owner);
    expect((await call(staff, 'GET', `/api/v1/teams/${teamId}/members`)).statusCode).toBe(200);
    expect((await call(staff, 'PATCH', `/api/v1/teams/${teamId}`, { name: 'Renamed by staff' })).json().data).toMatchObject({ role: 'owner' });
    const narrow = await mintToken(app, staff.cookie, origin, { name: 'teams', scopes: ['team:read'] });
    expect((await call(narrow, 'GET', `/api/v1/teams/${teamId}`)).json().error.code).toBe('not_owner');
  });
});

describe('team:read', () => {
  it('lists teams and members for a token holding it, and refuses a token without it (403 missing_scope)', async () => {
    const { teamId, owner, viewer } = await staffedTeam();
    const reader = await mintToken(app, viewer.cookie, origin, { name: 'teams', scopes: ['team:read'] });
    const teams = await call(reader, 'GET', '/api/v1/teams');
    expect(teams.statusCode).toBe(200);
    expect(teams.json().data.teams).toMatchObject([{ id: teamId, role: 'viewer', members: 4 }]);
    const members = (await call(reader, 'GET', `/api/v1/teams/${teamId}/members`)).json().data.members;
    expect(members).toHaveLength(4);
    expect(members.find((member: { id: string }) => member.id === owner.id)).toMatchObject({ email: owner.email, role: 'owner' });
    expect(members.find((member: { id: string }) => member.id === viewer.id)).toMatchObject({ email: viewer.email, role: 'viewer' });
    const without = await mintToken(app, viewer.cookie, origin, { name: 'links', scopes: ['links:read'] });
    const refused = await call(without, 'GET', '/api/v1/teams');
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.details).toMatchObject({ reason: 'missing_scope', required_scope: 'team:read' });
  });

  it('changes nothing with a token: team changes take a session', async () => {
    const owner = await person();
    const teamId = await createTeam(owner);
    const token = await mintToken(app, owner.cookie, origin, { name: 'all', scopes: ['team:read', 'links:write'] });
    for (const [method, url, payload] of [
      ['POST', '/api/v1/teams', { name: 'By token' }],
      ['PATCH', `/api/v1/teams/${teamId}`, { name: 'By token' }],
      ['POST', `/api/v1/teams/${teamId}/invitations`, { email: 'x@example.test', role: 'viewer' }],
    ] as const) {
      const refused = await call(token, method, url, payload);
      expect(refused.statusCode).toBe(401);
      expect(refused.json().error).toMatchObject({ code: 'unauthorized', details: { reason: 'session_required' } });
    }
    expect((await call(owner, 'GET', `/api/v1/teams/${teamId}`)).json().data.name).toBe('Marketing');
  });
});

describe('members and roles', () => {
  it('lets admins change roles below owner, and only owners make or unmake owners (audited)', async () => {
    const { teamId, owner, admin, editor, viewer } = await staffedTeam();
    const promoted = await call(admin, 'PATCH', `/api/v1/teams/${teamId}/members/${viewer.id}`, { role: 'editor' });
    expect(promoted.statusCode).toBe(200);
    expect(promoted.json().data).toMatchObject({ id: viewer.id, email: viewer.email, role: 'editor' });
    expect(await audited(teamId, 'team.member_role_changed')).toMatchObject([
      { actor_id: admin.id, details: { user_id: viewer.id, from: 'viewer', to: 'editor' } },
    ]);
    const toOwner = await call(admin, 'PATCH', `/api/v1/teams/${teamId}/members/${editor.id}`, { role: 'owner' });
    expect(toOwner.json().error).toMatchObject({ code: 'forbidden', details: { reason: 'team_role_too_low', role: 'admin', required_role: 'owner' } });
    expect((await call(admin, 'PATCH', `/api/v1/teams/${teamId}/members/${owner.id}`, { role: 'viewer' })).statusCode).toBe(403);
    expect((await call(editor, 'PATCH', `/api/v1/teams/${teamId}/members/${viewer.id}`, { role: 'viewer' })).json().error.details.required_role).toBe('admin');
    expect((await call(owner, 'PATCH', `/api/v1/teams/${teamId}/members/${editor.id}`, { role: 'owner' })).json().data.role).toBe('owner');
    expect((await call(owner, 'PATCH', `/api/v1/teams/${teamId}/members/00000000-0000-4000-8000-000000000000`, { role: 'viewer' })).statusCode).toBe(404);
  });

  it('keeps the last owner: neither demoted nor leaving (409 last_team_owner); with a second owner it may leave', async () => {
    const { teamId, owner, admin } = await staffedTeam();
    const demoted = await call(owner, 'PATCH', `/api/v1/teams/${teamId}/members/${owner.id}`, { role: 'admin' });
    expect(demoted.statusCode).toBe(409);
    expect(demoted.json().error).toMatchObject({ code: 'conflict', details: { reason: 'last_team_owner' } });
    expect(demoted.json().error.message).toMatch(/without an owner/);
    const leaving = await call(owner, 'DELETE', `/api/v1/teams/${teamId}/members/${owner.id}`);
    expect(leaving.statusCode).toBe(409);
    expect((await call(owner, 'PATCH', `/api/v1/teams/${teamId}/members/${admin.id}`, { role: 'owner' })).statusCode).toBe(200);
    expect((await call(owner, 'DELETE', `/api/v1/teams/${teamId}/members/${owner.id}`)).json().data).toEqual({ id: owner.id, removed: true });
    expect(await audited(teamId, 'team.member_left')).toMatchObject([{ actor_id: owner.id, details: { user_id: owner.id, role: 'owner' } }]);
    expect((await call(owner, 'GET', `/api/v1/teams/${teamId}`)).statusCode).toBe(403);
  });

  it('leaves one owner when two owners demote each other at once (one wins; the other is refused as a viewer or as the last owner)', async () => {
    const { teamId, owner, admin } = await staffedTeam();
    await call(owner, 'PATCH', `/api/v1/teams/${teamId}/members/${admin.id}`, { role: 'owner' });
    const answers = await Promise.all([
      call(owner, 'PATCH', `/api/v1/teams/${teamId}/members/${admin.id}`, { role: 'viewer' }),
      call(admin, 'PATCH', `/api/v1/teams/${teamId}/members/${owner.id}`, { role: 'viewer' }),
    ]);
    expect(answers.filter((answer) => answer.statusCode === 200)).toHaveLength(1);
    expect(answers.map((answer) => answer.json().error?.details?.reason).filter(Boolean)[0]).toMatch(/^(last_team_owner|team_role_too_low)$/);
    const members = await context.db.db.selectFrom('team_members').selectAll().where('team_id', '=', teamId).execute();
    expect(members.filter((member: { role: string }) => member.role === 'owner')).toHaveLength(1);
  });

  it('cuts a removed member off on the next request, by session and by token; admins cannot remove owners', async () => {
    const { teamId, owner, admin, editor } = await staffedTeam();
    const token = await mintToken(app, editor.cookie, origin, { name: 'teams', scopes: ['team:read'] });
    expect((await call(token, 'GET', `/api/v1/teams/${teamId}/members`)).statusCode).toBe(200);
    expect((await call(admin, 'DELETE', `/api/v1/teams/${teamId}/members/${owner.id}`)).json().error.details).toMatchObject({ required_role: 'owner' });
    expect((await call(editor, 'DELETE', `/api/v1/teams/${teamId}/members/${admin.id}`)).statusCode).toBe(403);
    expect((await call(admin, 'DELETE', `/api/v1/teams/${teamId}/members/${editor.id}`)).json().data).toEqual({ id: editor.id, removed: true });
    for (const caller of [editor, token]) {
      const after = await call(caller, 'GET', `/api/v1/teams/${teamId}/members`);
      expect(after.statusCode).toBe(403);
      expect(after.json().error.code).toBe('not_owner');
    }
    expect((await call(token, 'GET', '/api/v1/teams')).json().data.teams).toEqual([]);
    expect(await audited(teamId, 'team.member_removed')).toMatchObject([
      { actor_id: admin.id, details: { user_id: editor.id, email: editor.email, role: 'editor' } },
    ]);
    expect((await call(admin, 'DELETE', `/api/v1/teams/${teamId}/members/${editor.id}`)).statusCode).toBe(404);
  });
});

describe('invitations', () => {
  it('answers the link to the inviter without SMTP_URL, and stores only the SHA-256 of its secret', async () => {
    const owner = await person();
    const teamId = await createTeam(owner);
    const invited = await call(owner, 'POST', `/api/v1/teams/${teamId}/invitations`, { email: 'New.Person@Example.test', role: 'editor' });
    expect(invited.statusCode).toBe(201);
    const data = invited.json().data;
    expect(data).toMatchObject({ team_id: teamId, email: 'New.Person@Example.test', role: 'editor', state: 'pending', mailed: false, invited_by: owner.id });
    expect(data.link).toMatch(new RegExp(`^${context.config.publicUrl}/invitations/accept#token=[A-Za-z0-9_-]{43}$`));
    const days = (Date.parse(data.expires_at) - Date.parse(data.created_at)) / 86_400_000;
    expect(days).toBeCloseTo(7, 2);
    const row = await context.db.db.selectFrom('team_invitations').selectAll().where('id', '=', data.id).executeTakeFirstOrThrow();
    expect(row.token_hash).toBe(createHash('sha256').update(secretOf(data.link)).digest('hex'));
    expect(JSON.stringify(row)).not.toContain(secretOf(data.link));
    const listed = (await call(owner, 'GET', `/api/v1/teams/${teamId}/invitations`)).json().data.invitations;
    expect(listed).toMatchObject([{ id: data.id, state: 'pending' }]);
    expect(JSON.stringify(listed)).not.toContain(secretOf(data.link));
    expect(await audited(teamId, 'team.invitation_created')).toMatchObject([{ details: { email: 'New.Person@Example.test', role: 'editor', mailed: false } }]);
  });

  it('mails the link through SMTP_URL (a local SMTP server), and the invitee accepts it once', async () => {
    const owner = await person();
    const invitee = await person();
    const teamId = await createTeam(owner, 'Mailed team');
    const invited = await call(owner, 'POST', `/api/v1/teams/${teamId}/invitations`, { email: invitee.email.toUpperCase(), role: 'viewer' }, mailingApp);
    expect(invited.statusCode).toBe(201);
    expect(invited.json().data).toMatchObject({ mailed: true, link: null });
    const mail = smtp.mails.find((entry) => entry.to.some((to) => to.toLowerCase() === invitee.email.toLowerCase()));
    expect(mail?.subject).toBe('You are invited to the team Mailed team');
    const link = /(https?:\/\/\S+#token=[\w-]+)/.exec(mail!.text)![1]!;
    const accepted = await call(invitee, 'POST', '/api/v1/invitations/accept', { token: secretOf(link) });
    expect(accepted.statusCode).toBe(200);
    expect(accepted.json().data).toMatchObject({ id: teamId, role: 'viewer', members: 2 });
    expect(await audited(teamId, 'team.invitation_accepted')).toMatchObject([{ actor_id: invitee.id, details: { user_id: invitee.id, role: 'viewer' } }]);
    const again = await call(invitee, 'POST', '/api/v1/invitations/accept', { token: secretOf(link) });
    expect(again.statusCode).toBe(403);
    expect(again.json().error.details.reason).toBe('invitation_used');
    expect((await call(owner, 'GET', `/api/v1/teams/${teamId}/invitations`)).json().data.invitations).toEqual([]);
  });

  it('refuses an unknown, expired, revoked or another address’s invitation, and an address already a member', async () => {
    const owner = await person();
    const invitee = await person();
    const other = await person();
    const teamId = await createTeam(owner);
    const invite = async (email: string, role = 'viewer') => {
      const response = await call(owner, 'POST', `/api/v1/teams/${teamId}/invitations`, { email, role });
      expect(response.statusCode, response.body).toBe(201);
      return { id: response.json().data.id as string, token: secretOf(response.json().data.link) };
    };
    const accept = (caller: Person, token: string) => call(caller, 'POST', '/api/v1/invitations/accept', { token });

    expect((await accept(invitee, 'x'.repeat(43))).statusCode).toBe(404);

    const first = await invite(invitee.email);
    const foreign = await accept(other, first.token);
    expect(foreign.statusCode).toBe(403);
    expect(foreign.json().error.details.reason).toBe('invitation_other_address');
    expect((await call(owner, 'POST', `/api/v1/teams/${teamId}/invitations`, { email: invitee.email, role: 'admin' })).json().error.details.reason).toBe(
      'invitation_pending',
    );

    await context.db.db
      .updateTable('team_invitations')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', first.id)
      .execute();
    expect((await accept(invitee, first.token)).json().error.details.reason).toBe('invitation_expired');
    expect((await call(owner, 'GET', `/api/v1/teams/${teamId}/invitations`)).json().data.invitations).toMatchObject([{ id: first.id, state: 'expired' }]);

    // An expired invitation is replaced by the next one to the same address.
    const second = await invite(invitee.email);
    const revoked = await call(owner, 'DELETE', `/api/v1/teams/${teamId}/invitations/${second.id}`);
    expect(revoked.json().data).toMatchObject({ id: second.id, state: 'revoked' });
    expect(await audited(teamId, 'team.invitation_revoked')).toMatchObject([{ details: { invitation_id: second.id } }]);
    expect((await accept(invitee, second.token)).json().error.details.reason).toBe('invitation_revoked');
    expect((await call(owner, 'DELETE', `/api/v1/teams/${teamId}/invitations/${second.id}`)).statusCode).toBe(200);

    const third = await invite(invitee.email);
    expect((await accept(invitee, third.token)).statusCode).toBe(200);
    const member = await call(owner, 'POST', `/api/v1/teams/${teamId}/invitations`, { email: invitee.email, role: 'viewer' });
    expect(member.statusCode).toBe(409);
    expect(member.json().error.details.reason).toBe('already_member');
  });

  it('lets admins invite up to admin, owners invite owners, and refuses editors and viewers', async () => {
    const { teamId, admin, editor, viewer, owner } = await staffedTeam();
    expect((await call(admin, 'POST', `/api/v1/teams/${teamId}/invitations`, { email: 'a1@example.test', role: 'admin' })).statusCode).toBe(201);
    expect((await call(admin, 'POST', `/api/v1/teams/${teamId}/invitations`, { email: 'a2@example.test', role: 'owner' })).statusCode).toBe(403);
    expect((await call(owner, 'POST', `/api/v1/teams/${teamId}/invitations`, { email: 'a2@example.test', role: 'owner' })).statusCode).toBe(201);
    for (const member of [editor, viewer]) {
      const refused = await call(member, 'POST', `/api/v1/teams/${teamId}/invitations`, { email: 'a3@example.test', role: 'viewer' });
      expect(refused.json().error).toMatchObject({ code: 'forbidden', details: { reason: 'team_role_too_low', required_role: 'admin' } });
      expect((await call(member, 'GET', `/api/v1/teams/${teamId}/invitations`)).statusCode).toBe(403);
      expect((await call(member, 'GET', `/api/v1/teams/${teamId}/members`)).statusCode).toBe(200);
    }
    const other = await createTeam(owner, 'Other');
    const invitation = (await call(owner, 'POST', `/api/v1/teams/${other}/invitations`, { email: 'a4@example.test', role: 'viewer' })).json().data;
    // An invitation of another team is not found under this one.
    expect((await call(owner, 'DELETE', `/api/v1/teams/${teamId}/invitations/${invitation.id}`)).statusCode).toBe(404);
  });
});

describe('the audit log of a team', () => {
  it('lists the team’s changes newest first with their actor, to admins and owners only, paged and without IP addresses', async () => {
    const { teamId, owner, admin, viewer } = await staffedTeam();
    expect((await call(admin, 'PATCH', `/api/v1/teams/${teamId}/members/${viewer.id}`, { role: 'editor' })).statusCode).toBe(200);
    await audited(teamId, 'team.member_role_changed');
    const listed = await call(owner, 'GET', `/api/v1/teams/${teamId}/audit`);
    expect(listed.statusCode, listed.body).toBe(200);
    const entries = listed.json().data.entries;
    expect(entries[0]).toEqual({
      id: expect.any(String),
      action: 'team.member_role_changed',
      actor_id: admin.id,
      actor_email: admin.email,
      details: { team_id: teamId, user_id: viewer.id, email: viewer.email, from: 'viewer', to: 'editor' },
      created_at: expect.any(String),
    });
    expect(entries.map((entry: { action: string }) => entry.action)).toEqual(
      expect.arrayContaining(['team.created', 'team.invitation_created', 'team.invitation_accepted']),
    );
    expect(JSON.stringify(entries)).not.toMatch(/"ip"/);
    const first = await call(admin, 'GET', `/api/v1/teams/${teamId}/audit?limit=2`);
    expect(first.json().data.entries).toEqual(entries.slice(0, 2));
    const next = await call(admin, 'GET', `/api/v1/teams/${teamId}/audit?limit=2&cursor=${first.json().meta.next_cursor}`);
    expect(next.json().data.entries).toEqual(entries.slice(2, 4));
  });

  it('refuses editors and viewers (403 forbidden), outsiders (403 not_owner) and an unknown team (404)', async () => {
    const { teamId, editor, viewer } = await staffedTeam();
    for (const member of [editor, viewer]) {
      const refused = await call(member, 'GET', `/api/v1/teams/${teamId}/audit`);
      expect(refused.json().error).toMatchObject({ code: 'forbidden', details: { reason: 'team_role_too_low', required_role: 'admin' } });
    }
    const outsider = await person();
    expect((await call(outsider, 'GET', `/api/v1/teams/${teamId}/audit`)).json().error.code).toBe('not_owner');
    expect((await call(outsider, 'GET', '/api/v1/teams/00000000-0000-4000-8000-000000000000/audit')).statusCode).toBe(404);
    const otherTeam = await createTeam(outsider, 'Other');
    const own = (await call(outsider, 'GET', `/api/v1/teams/${otherTeam}/audit`)).json().data.entries;
    expect(own.every((entry: { details: { team_id: string } }) => entry.details.team_id === otherTeam)).toBe(true);
  });
});
