// Teams: the caller's teams with its role in each (GET /api/v1/teams), creating one (POST), and,
// under /teams/{id}, one team's page (team-detail.tsx).
import { useRoute } from 'preact-iso';
import { useState } from 'preact/hooks';
import { api, load, type Schemas } from '../api/client.js';
import { useI18n, type UiKey } from '../app/i18n.js';
import { Async, Empty, Field, fieldError, Notice, PageHeader, useLoad } from '../app/ui.js';
import { TeamDetail } from './team-detail.js';
import './teams.css';

export type Team = Schemas['Team'];
export type TeamRole = Team['role'];
export const TEAM_ROLES: TeamRole[] = ['owner', 'admin', 'editor', 'viewer'];
export const roleKey = (role: TeamRole) => `teams.role_${role}` as UiKey;

function CreateTeam({ onCreated }: { onCreated: () => void }) {
  const { t } = useI18n();
  const [name, setName] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error>();
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await load(api.POST('/api/v1/teams', { body: { name } }));
      setName('');
      onCreated();
    } catch (caught) {
      setError(caught instanceof Error ? caught : new Error(String(caught)));
    } finally {
      setBusy(false);
    }
  };
  const nameError = fieldError(error, 'name');
  return (
    <section class="card" aria-labelledby="team-create-heading">
      <h2 id="team-create-heading">{t('teams.create_heading')}</h2>
      <form onSubmit={submit} class="team-inline-form">
        <Field id="team-name" label={t('teams.name')} error={nameError}>
          <input id="team-name" type="text" required maxLength={100} value={name} onInput={(event) => setName(event.currentTarget.value)} />
        </Field>
        {error && !nameError ? <Notice kind="error">{error.message}</Notice> : null}
        <div class="form-actions">
          <button type="submit" class="button-primary" disabled={busy}>
            {busy ? t('teams.creating') : t('teams.create')}
          </button>
        </div>
      </form>
    </section>
  );
}

function TeamList() {
  const { t } = useI18n();
  const teams = useLoad((signal) => load(api.GET('/api/v1/teams', { params: { query: { limit: 200 } }, signal })), []);
  return (
    <>
      <PageHeader title={t('teams.title')} />
      <p class="muted">{t('teams.intro')}</p>
      <CreateTeam onCreated={teams.reload} />
      <section aria-labelledby="team-list-heading">
        <h2 id="team-list-heading">{t('teams.list_heading')}</h2>
        <Async loaded={teams}>
          {({ teams: list }) =>
            list.length === 0 ? (
              <Empty>
                <p>{t('teams.empty')}</p>
              </Empty>
            ) : (
              <div class="table-wrap">
                <table class="teams-table">
                  <caption class="visually-hidden">{t('teams.list_heading')}</caption>
                  <thead>
                    <tr>
                      <th scope="col">{t('teams.name')}</th>
                      <th scope="col">{t('teams.role')}</th>
                      <th scope="col">{t('teams.members_count')}</th>
                    </tr>
                  </thead>
                  <tbody>
                    {list.map((team) => (
                      <tr key={team.id}>
                        <th scope="row">
                          <a href={`/teams/${team.id}`}>{team.name}</a>
                        </th>
                        <td>{t(roleKey(team.role))}</td>
                        <td>{team.members}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )
          }
        </Async>
      </section>
    </>
  );
}

export function TeamsPage() {
  const { params } = useRoute();
  return params.id ? <TeamDetail id={params.id} /> : <TeamList />;
}
