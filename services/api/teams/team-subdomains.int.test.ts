import type { FastifyInstance } from 'fastify';
import type { Response as LightMyRequestResponse } from 'light-my-request';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditRepository } from '#shared/audit/audit.repository.js';
import type { Context } from '#shared/context.js';
import { mintToken } from '#tests/support/accounts.js';
import { claimSubdomain, createOwner, type TestOwner } from '#tests/support/owners.js';
import { closeContext, createTestContext } from '#tests/support/context.js';
import { joinTeam } from '#tests/support/teams.js';
import { waitFor } from '#tests/support/wait.js';
import { buildApp } from '#services/app.js';
import { createRepositories } from '#services/repositories.js';

// A subdomain that belongs to a team, through the real HTTP app on the real stores (PGlite and
// chDB, or Postgres, ClickHouse and Redis in the services run): each role allowed and refused on
// the subdomain, its links, statistics and visits, and a removed member cut off on the next request.

let context: Context;
let app: FastifyInstance;
let origin: string;

beforeAll(async () => {
  context = await createTestContext({ SMTP_URL: undefined, WEBHOOK_ALLOWLIST: '127.0.0.1' });
  app = (await buildApp(context)).app;
  origin = new URL(context.config.publicUrl).origin;
});

afterAll(async () => {
  await app?.close();
  await closeContext(context);
});

const session = (who: TestOwner) => ({ cookie: who.cookie, origin });

const join = (teamId: string, inviter: TestOwner, invitee: TestOwner, role: string) => joinTeam(app, origin, teamId, inviter, invitee, role);

/** A team with one member of each role (the team's owner is not the subdomain's), a stranger, and a subdomain of the admin's given to the team. */
async function teamSubdomain() {
  const teamOwner = await createOwner(context, app);
  const admin = await createOwner(context, app);
  const editor = await createOwner(context, app);
  const viewer = await createOwner(context, app);
  const stranger = await createOwner(context, app);
  const created = await app.inject({ method: 'POST', url: '/api/v1/teams', headers: session(teamOwner), payload: { name: 'Shared links' } });
  const teamId = created.json().data.id as string;
  await join(teamId, teamOwner, admin, 'admin');
  await join(teamId, teamOwner, editor, 'editor');
  await join(teamId, teamOwner, viewer, 'viewer');
  const name = await claimSubdomain(app, admin);
  const assigned = await app.inject({ method: 'PUT', url: `/api/v1/subdomains/${name}/team`, headers: admin.auth, payload: { team_id: teamId } });
  expect(assigned.statusCode, assigned.body).toBe(200);
  expect(assigned.json().data).toMatchObject({ name, team_id: teamId, owner_id: admin.id });
  const link = await app.inject({
    method: 'POST',
    url: '/api/v1/links',
    headers: admin.auth,
    payload: { subdomain: name, target_url: 'https://example.com/a' },
  });
  expect(link.statusCode, link.body).toBe(201);
  return { teamId, name, linkId: link.json().data.id as string, teamOwner, admin, editor, viewer, stranger };
}

type Role = 'teamOwner' | 'admin' | 'editor' | 'viewer' | 'stranger';
const WIDTH: Record<Role, number> = { teamOwner: 4, admin: 3, editor: 2, viewer: 1, stranger: 0 };
const NEED = { viewer: 1, editor: 2, admin: 3 } as const;

describe('a subdomain that belongs to a team', () => {
  it('admits each role to what it may, and refuses the rest: 403 team_role_too_low for a member, 403 not_owner for a stranger', async () => {
    const setup = await teamSubdomain();
    const { name, linkId } = setup;
    const operations: { what: string; need: keyof typeof NEED; run: (who: TestOwner) => Promise<LightMyRequestResponse> }[] = [
      { what: 'read its statistics', need: 'viewer', run: (who) => app.inject({ url: `/api/v1/stats/subdomain/${name}`, headers: who.auth }) },
      { what: "read a link's statistics", need: 'viewer', run: (who) => app.inject({ url: `/api/v1/stats/link/${linkId}`, headers: who.auth }) },
      { what: 'list its visits', need: 'viewer', run: (who) => app.inject({ url: `/api/v1/visits?subdomain=${name}`, headers: who.auth }) },
      { what: 'read a link', need: 'editor', run: (who) => app.inject({ url: `/api/v1/links/${linkId}`, headers: who.auth }) },
      {
        what: 'create a link',
        need: 'editor',
        run: (who) =>
          app.inject({ method: 'POST', url: '/api/v1/links', headers: who.auth, payload: { subdomain: name, target_url: 'https://example.com/b' } }),
      },
      {
        what: 'edit a link',
        need: 'editor',
        run: (who) => app.inject({ method: 'PATCH', url: `/api/v1/links/${linkId}`, headers: who.auth, payload: { title: 'edited' } }),
      },
      {
        what: 'change the policy',
        need: 'admin',
        run: (who) => app.inject({ method: 'PATCH', url: `/api/v1/subdomains/${name}`, headers: who.auth, payload: { title: 'Team site' } }),
      },
    ];
    for (const operation of operations) {
      for (const role of ['teamOwner', 'admin', 'editor', 'viewer', 'stranger'] as const) {
        const answer = await operation.run(setup[role]);
        const label = `${role} may${WIDTH[role] >= NEED[operation.need] ? '' : ' not'} ${operation.what}`;
        if (WIDTH[role] >= NEED[operation.need]) {
          expect(answer.statusCode, `${label}: ${answer.body}`).toBeLessThan(300);
        } else if (role === 'stranger') {
          expect(answer.statusCode, label).toBe(403);
          expect(answer.json().error.code, label).toBe('not_owner');
        } else {
          expect(answer.statusCode, label).toBe(403);
          expect(answer.json().error, label).toMatchObject({ code: 'forbidden', details: { reason: 'team_role_too_low', required_role: operation.need } });
        }
      }
    }
    // The public page of a team's subdomain says nothing of the team or its owner (private by default: no owner either).
    const page = await app.inject({ url: `/api/v1/subdomains/${name}` });
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toContain(setup.teamId);
    expect(page.body).not.toContain('team_id');
    expect(page.body).not.toContain(setup.admin.id);
    // The editor's link is the subdomain owner's (its visits are stored under that account), listed to every member.
    const listed = await app.inject({ url: `/api/v1/links?subdomain=${name}`, headers: setup.viewer.auth });
    expect(listed.statusCode).toBe(200);
    expect(listed.json().data.links.length).toBeGreaterThanOrEqual(3);
    expect((await app.inject({ url: `/api/v1/links?subdomain=${name}`, headers: setup.stranger.auth })).json().error.code).toBe('not_owner');
  });

  it("lists the team's subdomain to each member with include=teams, with the member's role; never to a stranger, nor after removal", async () => {
    const { teamId, name, teamOwner, admin, editor, viewer, stranger } = await teamSubdomain();
    const listed = async (who: TestOwner, include = true) => {
      const answer = await app.inject({ method: 'GET', url: `/api/v1/subdomains?limit=200${include ? '&include=teams' : ''}`, headers: who.auth });
      expect(answer.statusCode, answer.body).toBe(200);
      return answer.json().data.subdomains as { name: string; role: string; team_id: string | null }[];
    };
    expect((await listed(admin)).find((item) => item.name === name)).toMatchObject({ role: 'owner', team_id: teamId });
    for (const [who, role] of [
      [teamOwner, 'owner'],
      [editor, 'editor'],
      [viewer, 'viewer'],
    ] as const) {
      expect((await listed(who)).find((item) => item.name === name)).toMatchObject({ role, team_id: teamId });
      // Without include, a member's list is its own subdomains, as before.
      expect((await listed(who, false)).some((item) => item.name === name)).toBe(false);
    }
    expect((await listed(stranger)).some((item) => item.name === name)).toBe(false);
    const bad = await app.inject({ method: 'GET', url: '/api/v1/subdomains?include=everything', headers: viewer.auth });
    expect(bad.statusCode).toBe(422);
    expect((await app.inject({ method: 'DELETE', url: `/api/v1/teams/${teamId}/members/${viewer.id}`, headers: session(teamOwner) })).statusCode).toBe(200);
    expect((await listed(viewer)).some((item) => item.name === name)).toBe(false);
  });

  it('lets editors delete links and no viewer; cuts a removed member off on the next request; audits the assignment', async () => {
    const { teamId, name, linkId, admin, editor, viewer, teamOwner } = await teamSubdomain();
    expect((await app.inject({ method: 'DELETE', url: `/api/v1/links/${linkId}`, headers: viewer.auth })).statusCode).toBe(403);
    expect((await app.inject({ method: 'DELETE', url: `/api/v1/links/${linkId}`, headers: editor.auth })).statusCode).toBe(200);
    expect((await app.inject({ url: `/api/v1/stats/subdomain/${name}`, headers: viewer.auth })).statusCode).toBe(200);
    const removed = await app.inject({ method: 'DELETE', url: `/api/v1/teams/${teamId}/members/${viewer.id}`, headers: session(teamOwner) });
    expect(removed.statusCode).toBe(200);
    const after = await app.inject({ url: `/api/v1/stats/subdomain/${name}`, headers: viewer.auth });
    expect(after.statusCode).toBe(403);
    expect(after.json().error.code).toBe('not_owner');
    const [entry] = await waitFor(async () => {
      const rows = (await auditRepository(context.db.db).list({ action: 'subdomain.team_assigned', actorId: admin.id })).filter((row) => row.target === teamId);
      return rows.length > 0 && rows;
    }, 5000);
    expect(entry!.details).toMatchObject({ team_id: teamId, subdomain: name });
  });

  it('is given only by its owner who is an owner or admin of the team; taken back by its owner or a team admin, which cuts the members off', async () => {
    const { teamId, name, admin, editor, teamOwner, stranger } = await teamSubdomain();
    const own = await claimSubdomain(app, editor);
    const byEditor = await app.inject({ method: 'PUT', url: `/api/v1/subdomains/${own}/team`, headers: editor.auth, payload: { team_id: teamId } });
    expect(byEditor.json().error).toMatchObject({ code: 'forbidden', details: { reason: 'team_role_too_low', required_role: 'admin' } });
    const notOwner = await app.inject({ method: 'PUT', url: `/api/v1/subdomains/${own}/team`, headers: teamOwner.auth, payload: { team_id: teamId } });
    expect(notOwner.json().error.code).toBe('not_owner');
    const strangers = await claimSubdomain(app, stranger);
    expect(
      (await app.inject({ method: 'PUT', url: `/api/v1/subdomains/${strangers}/team`, headers: stranger.auth, payload: { team_id: teamId } })).json().error
        .code,
    ).toBe('not_owner');
    expect(
      (
        await app.inject({
          method: 'PUT',
          url: `/api/v1/subdomains/${own}/team`,
          headers: editor.auth,
          payload: { team_id: '00000000-0000-4000-8000-000000000000' },
        })
      ).statusCode,
    ).toBe(404);
    expect((await app.inject({ method: 'DELETE', url: `/api/v1/subdomains/${name}/team`, headers: editor.auth })).statusCode).toBe(403);
    const taken = await app.inject({ method: 'DELETE', url: `/api/v1/subdomains/${name}/team`, headers: teamOwner.auth });
    expect(taken.statusCode, taken.body).toBe(200);
    expect(taken.json().data.team_id).toBeNull();
    expect((await app.inject({ url: `/api/v1/stats/subdomain/${name}`, headers: editor.auth })).json().error.code).toBe('not_owner');
    expect((await app.inject({ url: `/api/v1/stats/subdomain/${name}`, headers: admin.auth })).statusCode).toBe(200);
  });

  it('keeps a member owning a subdomain of the team from leaving or being removed (409 team_subdomains) until it is taken back', async () => {
    const { teamId, name, admin, teamOwner } = await teamSubdomain();
    for (const [caller, label] of [
      [admin, 'leaving'],
      [teamOwner, 'removed'],
    ] as const) {
      const refused = await app.inject({ method: 'DELETE', url: `/api/v1/teams/${teamId}/members/${admin.id}`, headers: session(caller) });
      expect(refused.statusCode, label).toBe(409);
      expect(refused.json().error, label).toMatchObject({ code: 'conflict', details: { reason: 'team_subdomains', subdomains: [name] } });
    }
    expect((await app.inject({ method: 'DELETE', url: `/api/v1/subdomains/${name}/team`, headers: admin.auth })).statusCode).toBe(200);
    expect((await app.inject({ method: 'DELETE', url: `/api/v1/teams/${teamId}/members/${admin.id}`, headers: session(admin) })).statusCode).toBe(200);
  });

  it('refuses to delete the account owning a subdomain a team works on (409 team_subdomains), and gives the subdomain back when the team is deleted', async () => {
    const { teamId, name, admin, teamOwner } = await teamSubdomain();
    const staff = await createOwner(context, app, 'staff');
    const refused = await app.inject({ method: 'DELETE', url: `/api/v1/users/${admin.id}`, headers: session(staff) });
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error).toMatchObject({ code: 'conflict', details: { reason: 'team_subdomains', subdomains: [name] } });
    // The deletion's own transaction refuses too (a subdomain given to the team after the service's check).
    expect(await createRepositories(context).users.deleteAccount(admin.id)).toEqual({ refused: 'team_subdomains', subdomains: [name] });
    expect((await app.inject({ method: 'DELETE', url: `/api/v1/teams/${teamId}`, headers: session(teamOwner) })).statusCode).toBe(200);
    const listed = (await app.inject({ url: '/api/v1/subdomains', headers: admin.auth })).json().data.subdomains;
    expect(listed).toMatchObject([{ name, team_id: null }]);
  });
});

describe('exports and tokens on a team subdomain', () => {
  const exportOf = (name: string, auth: { authorization: string }, format = 'csv') =>
    app.inject({ url: `/api/v1/export?subdomain=${name}&format=${format}`, headers: auth });

  it('lets every member export its visits (viewer and up) in each format, and refuses a stranger (403 not_owner)', async () => {
    const setup = await teamSubdomain();
    for (const role of ['teamOwner', 'admin', 'editor', 'viewer'] as const) {
      for (const format of ['csv', 'json']) {
        const answer = await exportOf(setup.name, setup[role].auth, format);
        expect(answer.statusCode, `${role} exports ${format}: ${answer.body}`).toBe(200);
        expect(answer.headers['content-disposition']).toContain(`visits-subdomain-${setup.name}-`);
      }
    }
    // One of its links, too: a viewer exports it, a stranger does not.
    const byLink = (auth: { authorization: string }) => app.inject({ url: `/api/v1/export?link_id=${setup.linkId}&format=csv`, headers: auth });
    expect((await byLink(setup.viewer.auth)).statusCode).toBe(200);
    expect((await byLink(setup.stranger.auth)).json().error.code).toBe('not_owner');
    const refused = await exportOf(setup.name, setup.stranger.auth);
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.code).toBe('not_owner');
  });

  it("acts with the member's current role and within the token's scopes, and stops on the next request after removal", async () => {
    const { teamId, name, linkId, teamOwner, editor } = await teamSubdomain();
    const create = (auth: { authorization: string }) =>
      app.inject({ method: 'POST', url: '/api/v1/links', headers: auth, payload: { subdomain: name, target_url: 'https://example.com/t' } });
    // The editor's token (every user scope) writes links of the team's subdomain.
    expect((await create(editor.auth)).statusCode).toBe(201);
    // A token narrowed to stats:read reads, but does not write, whatever the member's role.
    const { token: narrow } = await mintToken(app, editor.cookie, origin, { name: 'stats only', scopes: ['stats:read'] });
    const narrowAuth = { authorization: `Bearer ${narrow}` };
    expect((await exportOf(name, narrowAuth)).statusCode).toBe(200);
    const unscoped = await create(narrowAuth);
    expect(unscoped.statusCode).toBe(403);
    expect(unscoped.json().error.details).toMatchObject({ reason: 'missing_scope', required_scope: 'links:write' });
    // Demoted to viewer: the same token is refused writes on its next request, and still exports.
    const demoted = await app.inject({
      method: 'PATCH',
      url: `/api/v1/teams/${teamId}/members/${editor.id}`,
      headers: session(teamOwner),
      payload: { role: 'viewer' },
    });
    expect(demoted.statusCode, demoted.body).toBe(200);
    const asViewer = await create(editor.auth);
    expect(asViewer.statusCode).toBe(403);
    expect(asViewer.json().error.details).toMatchObject({ reason: 'team_role_too_low', required_role: 'editor' });
    expect((await app.inject({ method: 'DELETE', url: `/api/v1/links/${linkId}`, headers: editor.auth })).statusCode).toBe(403);
    expect((await exportOf(name, editor.auth)).statusCode).toBe(200);
    // Removed: every token of the account is refused on the team's subdomain from the next request (403 not_owner).
    const removed = await app.inject({ method: 'DELETE', url: `/api/v1/teams/${teamId}/members/${editor.id}`, headers: session(teamOwner) });
    expect(removed.statusCode, removed.body).toBe(200);
    for (const auth of [editor.auth, narrowAuth]) {
      const exported = await exportOf(name, auth);
      expect(exported.statusCode).toBe(403);
      expect(exported.json().error.code).toBe('not_owner');
      expect((await app.inject({ url: `/api/v1/stats/subdomain/${name}`, headers: auth })).statusCode).toBe(403);
    }
    expect((await create(editor.auth)).json().error.code).toBe('not_owner');
    expect((await app.inject({ method: 'DELETE', url: `/api/v1/links/${linkId}`, headers: editor.auth })).json().error.code).toBe('not_owner');
  });
});

describe('webhooks on a team subdomain', () => {
  const HOOK = 'http://127.0.0.1:1024/team-hook';
  const create = (who: TestOwner, name: string) =>
    app.inject({ method: 'POST', url: '/api/v1/webhooks', headers: who.auth, payload: { url: HOOK, events: ['visit.new'], subdomain: name } });
  const listed = async (who: TestOwner) => (await app.inject({ url: '/api/v1/webhooks', headers: who.auth })).json().data.webhooks as { id: string }[];

  it("are the subdomain owner's: team admins and owners manage them, editors and viewers are refused (team_role_too_low), strangers not_owner", async () => {
    const setup = await teamSubdomain();
    const { name, admin, teamOwner, editor, viewer, stranger } = setup;
    for (const who of [editor, viewer]) {
      const refused = await create(who, name);
      expect(refused.statusCode).toBe(403);
      expect(refused.json().error.details).toMatchObject({ reason: 'team_role_too_low', required_role: 'admin' });
    }
    expect((await create(stranger, name)).json().error.code).toBe('not_owner');
    // The team's owner (not the subdomain's) creates one: it belongs to the subdomain's owner.
    const created = await create(teamOwner, name);
    expect(created.statusCode, created.body).toBe(201);
    const hook = created.json().data as { id: string; secret: string };
    expect(hook.secret).toBeTruthy();
    const row = await context.db.db.selectFrom('webhooks').select(['owner_id', 'subdomain']).where('id', '=', hook.id).executeTakeFirstOrThrow();
    expect(row).toEqual({ owner_id: admin.id, subdomain: name });
    for (const role of ['teamOwner', 'admin', 'editor', 'viewer', 'stranger'] as const) {
      const who = setup[role];
      const may = role === 'teamOwner' || role === 'admin';
      expect((await listed(who)).map((entry) => entry.id).includes(hook.id), `${role} lists it`).toBe(may);
      const operations = [
        app.inject({ url: `/api/v1/webhooks/${hook.id}`, headers: who.auth }),
        app.inject({ url: `/api/v1/webhooks/${hook.id}/deliveries`, headers: who.auth }),
        app.inject({ method: 'PATCH', url: `/api/v1/webhooks/${hook.id}`, headers: who.auth, payload: { description: role } }),
      ];
      for (const answer of await Promise.all(operations)) {
        if (may) expect(answer.statusCode, `${role}: ${answer.body}`).toBe(200);
        else if (role === 'stranger') expect(answer.json().error.code, role).toBe('not_owner');
        else expect(answer.json().error.details, role).toMatchObject({ reason: 'team_role_too_low', required_role: 'admin' });
        if (!may) expect(answer.body).not.toContain(hook.secret);
      }
    }
    // A team admin may not lift the subdomain filter: the webhook would reach every subdomain of the owner's.
    const lifted = await app.inject({ method: 'PATCH', url: `/api/v1/webhooks/${hook.id}`, headers: teamOwner.auth, payload: { subdomain: null } });
    expect(lifted.statusCode).toBe(403);
    expect(lifted.json().error.code).toBe('not_owner');
    // The creator leaves: the webhook stays, enabled, with the subdomain's owner; its admins still manage it.
    const second = await app.inject({
      method: 'POST',
      url: `/api/v1/teams/${setup.teamId}/invitations`,
      headers: session(teamOwner),
      payload: { email: stranger.email, role: 'owner' },
    });
    expect(second.statusCode, second.body).toBe(201);
    const token = new URL(second.json().data.link).hash.replace('#token=', '');
    expect((await app.inject({ method: 'POST', url: '/api/v1/invitations/accept', headers: session(stranger), payload: { token } })).statusCode).toBe(200);
    expect((await app.inject({ method: 'DELETE', url: `/api/v1/teams/${setup.teamId}/members/${teamOwner.id}`, headers: session(teamOwner) })).statusCode).toBe(
      200,
    );
    expect((await app.inject({ url: `/api/v1/webhooks/${hook.id}`, headers: teamOwner.auth })).json().error.code).toBe('not_owner');
    expect((await listed(teamOwner)).map((entry) => entry.id)).not.toContain(hook.id);
    expect((await app.inject({ url: `/api/v1/webhooks/${hook.id}`, headers: admin.auth })).json().data).toMatchObject({ enabled: true, subdomain: name });
    // A viewer may not delete it; the subdomain's owner (here also the team's admin) does.
    expect((await app.inject({ method: 'DELETE', url: `/api/v1/webhooks/${hook.id}`, headers: viewer.auth })).statusCode).toBe(403);
    expect((await app.inject({ method: 'DELETE', url: `/api/v1/webhooks/${hook.id}`, headers: admin.auth })).statusCode).toBe(200);
  });
});
