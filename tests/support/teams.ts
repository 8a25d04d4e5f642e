// Teams for the tests, through the API as the dashboard makes them: a team created by a signed-in
// owner, and members joining by invitation (without SMTP the answer carries the invitation link,
// whose fragment is the token the invitee accepts). Session requests carry the platform's origin.
import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';
import type { TestOwner } from './owners.js';

const session = (who: TestOwner, origin: string) => ({ cookie: who.cookie, origin });

/** Creates a team of `owner`; answers its id. */
export async function createTeam(app: FastifyInstance, origin: string, owner: TestOwner, name = 'A team'): Promise<string> {
  const created = await app.inject({ method: 'POST', url: '/api/v1/teams', headers: session(owner, origin), payload: { name } });
  expect(created.statusCode, created.body).toBe(201);
  return created.json().data.id as string;
}

/** `invitee` joins the team with `role`, invited by `inviter` (an owner or admin of it). */
export async function joinTeam(app: FastifyInstance, origin: string, teamId: string, inviter: TestOwner, invitee: TestOwner, role: string): Promise<void> {
  const invited = await app.inject({
    method: 'POST',
    url: `/api/v1/teams/${teamId}/invitations`,
    headers: session(inviter, origin),
    payload: { email: invitee.email, role },
  });
  expect(invited.statusCode, invited.body).toBe(201);
  const token = new URL(invited.json().data.link).hash.replace('#token=', '');
  const accepted = await app.inject({ method: 'POST', url: '/api/v1/invitations/accept', headers: session(invitee, origin), payload: { token } });
  expect(accepted.statusCode, accepted.body).toBe(200);
}
