// The subdomains list's team switcher: a filter by team, and on each card the subdomain's team,
// which its owner gives to one of the teams they own or administer (PUT /api/v1/subdomains/{name}/team)
// or takes back (DELETE).
import { useState } from 'preact/hooks';
import { api, load, type Schemas } from '../api/client.js';
import { useI18n } from '../app/i18n.js';
import { Notice } from '../app/ui.js';

type Team = Schemas['Team'];

/** The filter's value: `all` subdomains, those of `none` team, or a team's id. */
export type TeamFilterValue = string;

/** Whether a subdomain passes the team filter. */
export const passesTeamFilter = (filter: TeamFilterValue, teamId: string | null) =>
  filter === 'all' ? true : filter === 'none' ? teamId === null : teamId === filter;

export function TeamFilter({ teams, value, onChange }: { teams: Team[]; value: TeamFilterValue; onChange: (value: TeamFilterValue) => void }) {
  const { t } = useI18n();
  return (
    <div class="team-filter">
      <label for="team-filter">{t('teams.sub.filter')}</label>
      <select id="team-filter" value={value} onChange={(event) => onChange(event.currentTarget.value)}>
        <option value="all">{t('teams.sub.all')}</option>
        <option value="none">{t('teams.sub.none')}</option>
        {teams.map((team) => (
          <option key={team.id} value={team.id}>
            {team.name}
          </option>
        ))}
      </select>
    </div>
  );
}

export function SubdomainTeam({ name, teamId, teams, onChanged }: { name: string; teamId: string | null; teams: Team[]; onChanged: () => void }) {
  const { t } = useI18n();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const current = teams.find((team) => team.id === teamId);
  // Given only to a team one owns or administers; the current one stays listed whatever one's role in it.
  const offered = teams.filter((team) => team.role === 'owner' || team.role === 'admin' || team.id === teamId);
  const change = async (next: string) => {
    setBusy(true);
    setError(undefined);
    try {
      if (next === '') await load(api.DELETE('/api/v1/subdomains/{name}/team', { params: { path: { name } } }));
      else await load(api.PUT('/api/v1/subdomains/{name}/team', { params: { path: { name } }, body: { team_id: next } }));
      onChanged();
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="subdomain-team">
      <label>
        <span>{t('teams.sub.team')}</span>{' '}
        <select value={teamId ?? ''} disabled={busy} aria-label={t('teams.sub.team_of', { name })} onChange={(event) => void change(event.currentTarget.value)}>
          <option value="">{t('teams.sub.no_team')}</option>
          {offered.map((team) => (
            <option key={team.id} value={team.id}>
              {team.name}
            </option>
          ))}
        </select>
      </label>{' '}
      {current ? <a href={`/teams/${current.id}`}>{t('teams.sub.open', { name: current.name })}</a> : null}
      {error ? <Notice kind="error">{error}</Notice> : null}
    </div>
  );
}
