// One team's page: its members (role changes and removal as the caller's role allows; leaving), its
// pending invitations and audit log (admins and owners; team-parts.tsx), the caller's subdomains in
// it, and renaming and deleting (owners).
import { useLocation } from 'preact-iso';
import { useState } from 'preact/hooks';
import { api, load, type Schemas } from '../api/client.js';
import { formatDate } from '../app/format.js';
import { useI18n } from '../app/i18n.js';
import { useMe } from '../app/session.js';
import { Async, Empty, Field, Notice, PageHeader, useLoad } from '../app/ui.js';
import { AuditLog, Invitations, useAction } from './team-parts.js';
import { roleKey, TEAM_ROLES, type Team, type TeamRole } from './teams.js';

type Member = Schemas['TeamMember'];
const RANK: Record<TeamRole, number> = { owner: 3, admin: 2, editor: 1, viewer: 0 };
const atLeast = (role: TeamRole, required: TeamRole) => RANK[role] >= RANK[required];

function Members({ team, onLeft }: { team: Team; onLeft: () => void }) {
  const { t, locale } = useI18n();
  const me = useMe();
  const members = useLoad(
    (signal) => load(api.GET('/api/v1/teams/{id}/members', { params: { path: { id: team.id }, query: { limit: 100 } }, signal })),
    [team.id],
  );
  const action = useAction();
  const [done, setDone] = useState<string>();
  const manages = (member: Member) => member.id !== me.id && atLeast(team.role, 'admin') && (member.role !== 'owner' || team.role === 'owner');
  const offered = TEAM_ROLES.filter((role) => role !== 'owner' || team.role === 'owner');
  const setRole = (member: Member, role: TeamRole) =>
    action.run(async () => {
      await load(api.PATCH('/api/v1/teams/{id}/members/{user_id}', { params: { path: { id: team.id, user_id: member.id } }, body: { role } }));
      setDone(t('teams.role_changed', { email: member.email, role: t(roleKey(role)) }));
      members.reload();
    });
  const remove = (member: Member) =>
    action.run(async () => {
      const leaving = member.id === me.id;
      if (leaving && !window.confirm(t('teams.leave_confirm', { name: team.name }))) return;
      await load(api.DELETE('/api/v1/teams/{id}/members/{user_id}', { params: { path: { id: team.id, user_id: member.id } } }));
      if (leaving) onLeft();
      else {
        setDone(t('teams.removed', { email: member.email }));
        members.reload();
      }
    });
  return (
    <section aria-labelledby="team-members-heading">
      <h2 id="team-members-heading">{t('teams.members_heading')}</h2>
      {done ? <Notice kind="ok">{done}</Notice> : null}
      {action.error ? <Notice kind="error">{action.error.message}</Notice> : null}
      <Async loaded={members}>
        {({ members: list }) => (
          <div class="table-wrap">
            <table class="team-table team-members">
              <caption class="visually-hidden">{t('teams.members_heading')}</caption>
              <thead>
                <tr>
                  <th scope="col">{t('teams.member')}</th>
                  <th scope="col">{t('teams.invite_role')}</th>
                  <th scope="col">{t('teams.joined')}</th>
                  <th scope="col">{t('teams.actions')}</th>
                </tr>
              </thead>
              <tbody>
                {list.map((member) => (
                  <tr key={member.id} data-member={member.email}>
                    <th scope="row">
                      {member.display_name ? `${member.display_name} · ` : ''}
                      {member.email} {member.id === me.id ? <span class="muted">{t('teams.you')}</span> : null}
                    </th>
                    <td>
                      {manages(member) ? (
                        <select
                          aria-label={t('teams.change_role', { email: member.email })}
                          value={member.role}
                          disabled={action.busy}
                          onChange={(event) => void setRole(member, event.currentTarget.value as TeamRole)}
                        >
                          {offered.map((role) => (
                            <option key={role} value={role}>
                              {t(roleKey(role))}
                            </option>
                          ))}
                        </select>
                      ) : (
                        t(roleKey(member.role))
                      )}
                    </td>
                    <td>{formatDate(locale, member.created_at)}</td>
                    <td class="team-member-actions">
                      {member.id === me.id ? (
                        <button type="button" class="button-small" disabled={action.busy} onClick={() => void remove(member)}>
                          {t('teams.leave')}
                        </button>
                      ) : manages(member) ? (
                        <button
                          type="button"
                          class="button-small button-danger"
                          disabled={action.busy}
                          aria-label={t('teams.remove_named', { email: member.email })}
                          onClick={() => void remove(member)}
                        >
                          {t('teams.remove')}
                        </button>
                      ) : null}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Async>
    </section>
  );
}

function Subdomains({ team }: { team: Team }) {
  const { t } = useI18n();
  const subdomains = useLoad((signal) => load(api.GET('/api/v1/subdomains', { params: { query: { limit: 200 } }, signal })), []);
  return (
    <section aria-labelledby="team-subdomains-heading">
      <h2 id="team-subdomains-heading">{t('teams.subdomains_heading')}</h2>
      <p class="muted">{t('teams.subdomains_hint')}</p>
      <Async loaded={subdomains}>
        {({ subdomains: list }) => {
          const mine = list.filter((subdomain) => subdomain.team_id === team.id);
          return mine.length === 0 ? (
            <Empty>
              <p>{t('teams.subdomains_empty')}</p>
            </Empty>
          ) : (
            <ul class="plain-list">
              {mine.map((subdomain) => (
                <li key={subdomain.name}>
                  <a href={`/subdomains/${subdomain.name}`}>{subdomain.name}</a>
                </li>
              ))}
            </ul>
          );
        }}
      </Async>
    </section>
  );
}

function Settings({ team, onChanged, onDeleted }: { team: Team; onChanged: () => void; onDeleted: () => void }) {
  const { t } = useI18n();
  const [name, setName] = useState(team.name);
  const [done, setDone] = useState<string>();
  const action = useAction();
  const rename = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const renamed = await load(api.PATCH('/api/v1/teams/{id}', { params: { path: { id: team.id } }, body: { name } }));
      setDone(t('teams.renamed', { name: renamed.name }));
      onChanged();
    });
  };
  const remove = () =>
    action.run(async () => {
      if (!window.confirm(t('teams.delete_confirm', { name: team.name }))) return;
      await load(api.DELETE('/api/v1/teams/{id}', { params: { path: { id: team.id } } }));
      onDeleted();
    });
  return (
    <section aria-labelledby="team-settings-heading">
      <h2 id="team-settings-heading">{t('teams.settings_heading')}</h2>
      {done ? <Notice kind="ok">{done}</Notice> : null}
      {action.error ? <Notice kind="error">{action.error.message}</Notice> : null}
      <form class="card" onSubmit={rename}>
        <Field id="team-rename" label={t('teams.name')}>
          <input id="team-rename" type="text" required maxLength={100} value={name} onInput={(event) => setName(event.currentTarget.value)} />
        </Field>
        <div class="form-actions">
          <button type="submit" disabled={action.busy}>
            {t('teams.rename')}
          </button>
          <button type="button" class="button-danger" disabled={action.busy} onClick={() => void remove()}>
            {t('teams.delete')}
          </button>
        </div>
      </form>
    </section>
  );
}

export function TeamDetail({ id }: { id: string }) {
  const { t } = useI18n();
  const { route } = useLocation();
  const team = useLoad((signal) => load(api.GET('/api/v1/teams/{id}', { params: { path: { id } }, signal })), [id]);
  const loaded = team.state === 'ready' ? team.data : undefined;
  return (
    <>
      <PageHeader title={loaded ? loaded.name : t('teams.title')}>
        <a href="/teams">{t('teams.back')}</a>
      </PageHeader>
      <Async loaded={team}>
        {(current) => (
          <>
            <p class="muted">{t('teams.your_role', { role: t(roleKey(current.role)) })}</p>
            <Members team={current} onLeft={() => route('/teams')} />
            {atLeast(current.role, 'admin') ? <Invitations team={current} /> : null}
            <Subdomains team={current} />
            {current.role === 'owner' ? <Settings team={current} onChanged={team.reload} onDeleted={() => route('/teams')} /> : null}
            {atLeast(current.role, 'admin') ? <AuditLog team={current} /> : null}
          </>
        )}
      </Async>
    </>
  );
}
