// Parts of a team's page: its invitations (invite, the link shown once when no mail is sent,
// revoke) and its audit log, with the action helper the page's forms share.
import { useState } from 'preact/hooks';
import { api, load, type Schemas } from '../api/client.js';
import { formatDateTime } from '../app/format.js';
import { useI18n, type UiKey } from '../app/i18n.js';
import { Async, CopyButton, Empty, Field, fieldError, Notice, useLoad } from '../app/ui.js';
import { roleKey, TEAM_ROLES, type Team, type TeamRole } from './teams.js';

type Invitation = Schemas['TeamInvitation'];

export /** Runs an action and turns its failure into the page's error notice. */
function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error>();
  const run = async (action: () => Promise<void>) => {
    setBusy(true);
    setError(undefined);
    try {
      await action();
    } catch (caught) {
      setError(caught instanceof Error ? caught : new Error(String(caught)));
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run };
}

export function Invitations({ team }: { team: Team }) {
  const { t, locale } = useI18n();
  const invitations = useLoad(
    (signal) => load(api.GET('/api/v1/teams/{id}/invitations', { params: { path: { id: team.id }, query: { limit: 100 } }, signal })),
    [team.id],
  );
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<TeamRole>('viewer');
  const [invited, setInvited] = useState<{ email: string; link: string | null }>();
  const [done, setDone] = useState<string>();
  const action = useAction();
  const invite = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      setDone(undefined);
      const created = await load(api.POST('/api/v1/teams/{id}/invitations', { params: { path: { id: team.id } }, body: { email, role } }));
      setInvited({ email: created.email, link: created.link });
      setEmail('');
      invitations.reload();
    });
  };
  const revoke = (invitation: Invitation) =>
    action.run(async () => {
      await load(api.DELETE('/api/v1/teams/{id}/invitations/{invitation_id}', { params: { path: { id: team.id, invitation_id: invitation.id } } }));
      setDone(t('teams.revoked', { email: invitation.email }));
      invitations.reload();
    });
  const emailError = fieldError(action.error, 'email');
  return (
    <section aria-labelledby="team-invitations-heading">
      <h2 id="team-invitations-heading">{t('teams.invitations_heading')}</h2>
      <form class="card" onSubmit={invite} aria-labelledby="team-invite-heading">
        <h3 id="team-invite-heading">{t('teams.invite_heading')}</h3>
        <div class="form-grid">
          <Field id="invite-email" label={t('teams.email')} error={emailError}>
            <input id="invite-email" type="email" required maxLength={254} value={email} onInput={(event) => setEmail(event.currentTarget.value)} />
          </Field>
          <Field id="invite-role" label={t('teams.invite_role')}>
            <select id="invite-role" value={role} onChange={(event) => setRole(event.currentTarget.value as TeamRole)}>
              {TEAM_ROLES.filter((option) => option !== 'owner' || team.role === 'owner').map((option) => (
                <option key={option} value={option}>
                  {t(roleKey(option))}
                </option>
              ))}
            </select>
          </Field>
        </div>
        {action.error && !emailError ? <Notice kind="error">{action.error.message}</Notice> : null}
        <div class="form-actions">
          <button type="submit" class="button-primary" disabled={action.busy}>
            {action.busy ? t('teams.inviting') : t('teams.invite')}
          </button>
        </div>
      </form>
      {invited ? (
        invited.link ? (
          <div class="card team-invitation-created">
            <Notice kind="info">{t('teams.invited_link', { email: invited.email })}</Notice>
            <div class="team-invitation-link" role="group" aria-label={t('teams.invitation_link')}>
              <code>{invited.link}</code>
              <CopyButton text={invited.link} label={t('teams.invitation_link')} />
            </div>
            <button type="button" onClick={() => setInvited(undefined)}>
              {t('teams.link_done')}
            </button>
          </div>
        ) : (
          <Notice kind="ok">{t('teams.invited_mailed', { email: invited.email })}</Notice>
        )
      ) : null}
      {done ? <Notice kind="ok">{done}</Notice> : null}
      <Async loaded={invitations}>
        {({ invitations: list }) =>
          list.length === 0 ? (
            <Empty>
              <p>{t('teams.invitations_empty')}</p>
            </Empty>
          ) : (
            <ul class="plain-list team-invitations">
              {list.map((invitation) => (
                <li key={invitation.id}>
                  <strong>{invitation.email}</strong> · {t(roleKey(invitation.role))} · {t(`teams.state_${invitation.state}` as UiKey)} ·{' '}
                  {t(invitation.state === 'expired' ? 'teams.expired_at' : 'teams.expires')} {formatDateTime(locale, invitation.expires_at)}{' '}
                  <button
                    type="button"
                    class="button-small button-danger"
                    disabled={action.busy}
                    aria-label={t('teams.revoke_named', { email: invitation.email })}
                    onClick={() => void revoke(invitation)}
                  >
                    {t('teams.revoke')}
                  </button>
                </li>
              ))}
            </ul>
          )
        }
      </Async>
    </section>
  );
}

export function AuditLog({ team }: { team: Team }) {
  const { t, locale } = useI18n();
  const audit = useLoad((signal) => load(api.GET('/api/v1/teams/{id}/audit', { params: { path: { id: team.id }, query: { limit: 100 } }, signal })), [team.id]);
  return (
    <section aria-labelledby="team-audit-heading">
      <h2 id="team-audit-heading">{t('teams.audit_heading')}</h2>
      <Async loaded={audit}>
        {({ entries }) =>
          entries.length === 0 ? (
            <Empty>
              <p>{t('teams.audit_empty')}</p>
            </Empty>
          ) : (
            <div class="table-wrap">
              <table class="team-table team-audit">
                <caption class="visually-hidden">{t('teams.audit_heading')}</caption>
                <thead>
                  <tr>
                    <th scope="col">{t('teams.audit_when')}</th>
                    <th scope="col">{t('teams.audit_who')}</th>
                    <th scope="col">{t('teams.audit_what')}</th>
                  </tr>
                </thead>
                <tbody>
                  {entries.map((entry) => (
                    <tr key={entry.id} data-action={entry.action}>
                      <td>{formatDateTime(locale, entry.created_at)}</td>
                      <td>{entry.actor_email ?? t('teams.audit_erased')}</td>
                      <td>{auditText(t, entry)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </Async>
    </section>
  );
}

/** An audit entry in words: the action, and who or what it was about when the entry says so. */
function auditText(t: ReturnType<typeof useI18n>['t'], entry: Schemas['TeamAuditEntry']): string {
  const key = `teams.audit.${entry.action}` as UiKey;
  const said = t(key);
  const what = said === key ? entry.action : said;
  const { email, from, to, subdomain } = entry.details;
  const about = [email, typeof from === 'string' && typeof to === 'string' ? `${from} → ${to}` : undefined, subdomain].filter(
    (part): part is string => typeof part === 'string' && part !== '',
  );
  return about.length > 0 ? `${what} (${about.join(', ')})` : what;
}
