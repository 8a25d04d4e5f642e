// One's account: change the password (POST /api/v1/me/password: the current one required, the
// other sessions signed out) and the signed-in sessions (GET /api/v1/me/sessions), each of which
// can be signed out (DELETE /api/v1/me/sessions/{id}); signing out the current one ends this session;
// two-factor sign-in (two-factor.tsx); deleting the account, its data downloaded first (account-delete.tsx).
import { useState } from 'preact/hooks';
import { api, ApiError, load, type Schemas } from '../api/client.js';
import { formatDateTime } from '../app/format.js';
import { useI18n } from '../app/i18n.js';
import { useSession } from '../app/session.js';
import { Async, CurrentPasswordField, Empty, Field, fieldError, Notice, PageHeader, useLoad } from '../app/ui.js';
import { DeleteAccountSection } from './account-delete.js';
import { TwoFactorSection } from './two-factor.js';
import './account.css';

type Session = Schemas['Session'];

/** A field's message from a 409 `conflict` (a weak password) or a 422 `validation_error`. */
function passwordError(error: unknown, field: string): string | undefined {
  if (error instanceof ApiError && error.code === 'conflict' && typeof error.details.password === 'string') return error.details.password;
  return fieldError(error, field);
}

function ChangePassword({ onChanged }: { onChanged: () => void }) {
  const { t } = useI18n();
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error>();
  const [revoked, setRevoked] = useState<number>();

  const submit = async (event: Event) => {
    event.preventDefault();
    if (busy) return;
    setBusy(true);
    setError(undefined);
    setRevoked(undefined);
    try {
      const done = await load(api.POST('/api/v1/me/password', { body: { current_password: current, new_password: next } }));
      setRevoked(done.other_sessions_revoked);
      setCurrent('');
      setNext('');
      onChanged();
    } catch (caught) {
      setError(caught instanceof Error ? caught : new Error(String(caught)));
    } finally {
      setBusy(false);
    }
  };

  const newError = passwordError(error, 'new_password');
  const currentError = error instanceof ApiError && error.details.reason === 'current_password_wrong' ? error.message : fieldError(error, 'current_password');
  const otherError = error && !newError && !currentError ? error.message : undefined;
  return (
    <section class="card account-section" aria-labelledby="password-title">
      <h2 id="password-title">{t('account.password_title')}</h2>
      <p class="muted">{t('account.password_intro')}</p>
      <form onSubmit={submit}>
        <CurrentPasswordField id="current-password" label={t('account.current_password')} error={currentError} value={current} onValue={setCurrent} />
        <Field id="new-password" label={t('account.new_password')} hint={t('account.new_password_hint')} error={newError}>
          <input
            id="new-password"
            type="password"
            autocomplete="new-password"
            required
            minLength={12}
            maxLength={256}
            value={next}
            onInput={(event) => setNext(event.currentTarget.value)}
            aria-invalid={newError ? true : undefined}
            aria-describedby={newError ? 'new-password-hint new-password-error' : 'new-password-hint'}
          />
        </Field>
        {otherError ? <Notice kind="error">{otherError}</Notice> : null}
        {revoked !== undefined ? <Notice kind="ok">{t('account.password_changed', { count: revoked })}</Notice> : null}
        <button type="submit" class="button-primary" disabled={busy}>
          {busy ? t('account.password_submitting') : t('account.password_submit')}
        </button>
      </form>
    </section>
  );
}

function SessionRow({ session, onRevoked }: { session: Session; onRevoked: (current: boolean) => void }) {
  const { t, locale } = useI18n();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const agent = session.user_agent ?? t('account.session_unknown_agent');
  const revoke = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const done = await load(api.DELETE('/api/v1/me/sessions/{id}', { params: { path: { id: session.id } } }));
      onRevoked(done.signed_out);
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
      setBusy(false);
    }
  };
  return (
    <tr>
      <th scope="row" class="session-agent">
        <span>{agent}</span>
        {session.current ? <span class="session-current">{t('account.session_current')}</span> : null}
      </th>
      <td data-label={t('account.session_ip')}>{session.ip ?? '—'}</td>
      <td data-label={t('account.session_created')}>{formatDateTime(locale, session.created_at)}</td>
      <td data-label={t('account.session_seen')}>{formatDateTime(locale, session.last_seen_at)}</td>
      <td>
        <button
          type="button"
          class="button-quiet"
          disabled={busy}
          aria-label={t('account.session_revoke_label', { agent, ip: session.ip ?? '—' })}
          onClick={() => void revoke()}
        >
          {t('account.session_revoke')}
        </button>
        {error ? <Notice kind="error">{error}</Notice> : null}
      </td>
    </tr>
  );
}

function Sessions({ round }: { round: number }) {
  const { t } = useI18n();
  const { refresh } = useSession();
  const [notice, setNotice] = useState(false);
  const loaded = useLoad((signal) => load(api.GET('/api/v1/me/sessions', { signal })), [round]);
  const onRevoked = (current: boolean) => {
    // This session is gone: the dashboard returns to the sign-in page.
    if (current) return void refresh();
    setNotice(true);
    loaded.reload();
  };
  return (
    <section class="card account-section" aria-labelledby="sessions-title">
      <h2 id="sessions-title">{t('account.sessions_title')}</h2>
      <p class="muted">{t('account.sessions_intro')}</p>
      {notice ? <Notice kind="ok">{t('account.session_revoked')}</Notice> : null}
      <Async loaded={loaded}>
        {(data) =>
          data.sessions.length <= 1 && data.sessions.every((session) => session.current) ? (
            <>
              {data.sessions.length === 1 ? <SessionTable sessions={data.sessions} onRevoked={onRevoked} /> : null}
              <Empty>
                <p>{t('account.sessions_empty')}</p>
              </Empty>
            </>
          ) : (
            <SessionTable sessions={data.sessions} onRevoked={onRevoked} />
          )
        }
      </Async>
    </section>
  );
}

function SessionTable({ sessions, onRevoked }: { sessions: Session[]; onRevoked: (current: boolean) => void }) {
  const { t } = useI18n();
  return (
    <div class="table-wrap" tabIndex={0} role="region" aria-label={t('account.sessions_title')}>
      <table class="sessions-table">
        <thead>
          <tr>
            <th scope="col">{t('account.session_device')}</th>
            <th scope="col">{t('account.session_ip')}</th>
            <th scope="col">{t('account.session_created')}</th>
            <th scope="col">{t('account.session_seen')}</th>
            <th scope="col">{t('account.session_actions')}</th>
          </tr>
        </thead>
        <tbody>
          {sessions.map((session) => (
            <SessionRow key={session.id} session={session} onRevoked={onRevoked} />
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** How many of the account's newest activity entries the page shows. */
const ACTIVITY_SIZE = 20;

/** The account's own activity (GET /api/v1/me/audit): when, what, and who acted (staff's identity is not told). */
function Activity({ round }: { round: number }) {
  const { t, locale } = useI18n();
  const loaded = useLoad((signal) => load(api.GET('/api/v1/me/audit', { params: { query: { limit: ACTIVITY_SIZE } }, signal })), [round]);
  const byLabel = { self: 'account.activity_by_self', staff: 'account.activity_by_staff', platform: 'account.activity_by_platform' } as const;
  return (
    <section class="card account-section" aria-labelledby="activity-title">
      <h2 id="activity-title">{t('account.activity_title')}</h2>
      <p class="muted">{t('account.activity_intro')}</p>
      <Async loaded={loaded}>
        {(data) =>
          data.entries.length === 0 ? (
            <Empty />
          ) : (
            <div class="table-wrap" tabIndex={0} role="region" aria-label={t('account.activity_title')}>
              <table class="activity-table">
                <thead>
                  <tr>
                    <th scope="col">{t('account.activity_when')}</th>
                    <th scope="col">{t('account.activity_action')}</th>
                    <th scope="col">{t('account.activity_by')}</th>
                    <th scope="col">{t('account.session_ip')}</th>
                  </tr>
                </thead>
                <tbody>
                  {data.entries.map((entry) => (
                    <tr key={entry.id}>
                      <td class="nowrap">{formatDateTime(locale, entry.created_at)}</td>
                      <td>
                        <code>{entry.action}</code>
                      </td>
                      <td>{t(byLabel[entry.by])}</td>
                      <td class="nowrap">{entry.ip ?? '—'}</td>
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

export function AccountPage() {
  const { t } = useI18n();
  // A password change signs the other sessions out: the list is read again.
  const [round, setRound] = useState(0);
  return (
    <>
      <PageHeader title={t('account.title')} />
      <ChangePassword onChanged={() => setRound((value) => value + 1)} />
      <TwoFactorSection />
      <Sessions round={round} />
      <Activity round={round} />
      <DeleteAccountSection />
    </>
  );
}
