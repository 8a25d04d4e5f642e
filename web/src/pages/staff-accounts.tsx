// The staff page's accounts table (GET /api/v1/users): each account's state, a password-reset link
// to hand over (POST /api/v1/users/{id}/password-reset), and disabling or re-enabling the account
// after a confirmation (PATCH /api/v1/users/{id}), and deleting it after a confirmation that says it
// cannot be undone and offers exporting first (DELETE /api/v1/users/{id}); each account's history
// (its audit trail, GET /api/v1/users/{id}/audit).
import { useEffect, useState } from 'preact/hooks';
import { api, call, load, type Schemas } from '../api/client.js';
import { formatDateTime } from '../app/format.js';
import { useI18n } from '../app/i18n.js';
import { useMe } from '../app/session.js';
import { Async, CopyButton, Empty, MetaPager, Notice, useCursorPages, useLoad, useModalDialog } from '../app/ui.js';

type User = Schemas['User'];
const PAGE_SIZE = 25;
/** How many of an account's newest audit entries its history shows. */
const HISTORY_SIZE = 50;

/** The accounts list's pages (a stack of cursors for going back) and its load. */
export function useListing(round: number) {
  const pages = useCursorPages();
  const { cursor } = pages;
  const loaded = useLoad(
    (signal) => call(api.GET('/api/v1/users', { params: { query: { limit: PAGE_SIZE, ...(cursor ? { cursor } : {}) } }, signal })),
    [cursor, round],
  );
  return { loaded, pages };
}

type Listing = ReturnType<typeof useListing>;

/** A reset link just issued: shown once, to hand over privately. */
interface IssuedLink {
  email: string;
  url: string;
  expiresAt: string;
}

/** Asks before disabling or re-enabling an account, saying what it does; the API's refusal (own account, last staff) shows in it. */
function StateDialog({ user, onClose, onChanged }: { user: User | undefined; onClose: () => void; onChanged: (user: User) => void }) {
  const { t } = useI18n();
  const dialog = useModalDialog(user !== undefined, onClose);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  useEffect(() => setError(undefined), [user]);
  const disabling = user ? !user.disabled : true;
  const confirm = async () => {
    if (!user) return;
    setBusy(true);
    setError(undefined);
    try {
      onChanged(await load(api.PATCH('/api/v1/users/{id}', { params: { path: { id: user.id } }, body: { disabled: disabling } })));
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
    } finally {
      setBusy(false);
    }
  };
  return (
    <dialog {...dialog} aria-labelledby="user-state-title" aria-describedby="user-state-body">
      {user ? (
        <>
          <h2 id="user-state-title">{t(disabling ? 'staff.disable_title' : 'staff.enable_title', { email: user.email })}</h2>
          <p id="user-state-body">{t(disabling ? 'staff.disable_body' : 'staff.enable_body')}</p>
          {error ? <Notice kind="error">{error}</Notice> : null}
          <div class="form-actions">
            <button type="button" onClick={onClose}>
              {t('action.cancel')}
            </button>
            <button type="button" class={disabling ? 'button-danger' : 'button-primary'} onClick={confirm} disabled={busy}>
              {busy ? t('action.saving') : t(disabling ? 'staff.disable' : 'staff.enable')}
            </button>
          </div>
        </>
      ) : null}
    </dialog>
  );
}

/** Asks before deleting an account: not undoable, export first; the API's refusal (a team's last owner, a team's subdomain) shows in it. */
function DeleteDialog({ user, onClose, onDeleted }: { user: User | undefined; onClose: () => void; onDeleted: (user: User) => void }) {
  const { t } = useI18n();
  const dialog = useModalDialog(user !== undefined, onClose);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  useEffect(() => setError(undefined), [user]);
  const confirm = async () => {
    if (!user) return;
    setBusy(true);
    setError(undefined);
    try {
      await load(api.DELETE('/api/v1/users/{id}', { params: { path: { id: user.id } } }));
      onDeleted(user);
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
    } finally {
      setBusy(false);
    }
  };
  return (
    <dialog {...dialog} aria-labelledby="user-delete-title" aria-describedby="user-delete-body">
      {user ? (
        <>
          <h2 id="user-delete-title">{t('staff.delete_title', { email: user.email })}</h2>
          <p id="user-delete-body">{t('staff.delete_body')}</p>
          {error ? <Notice kind="error">{error}</Notice> : null}
          <div class="form-actions">
            <button type="button" onClick={onClose}>
              {t('action.cancel')}
            </button>
            <button type="button" class="button-danger" onClick={confirm} disabled={busy}>
              {busy ? t('action.saving') : t('staff.delete_confirm')}
            </button>
          </div>
        </>
      ) : null}
    </dialog>
  );
}

/** An account's newest audit entries: when, what, by whom, from where. */
function HistoryEntries({ id }: { id: string }) {
  const { t, locale } = useI18n();
  const loaded = useLoad((signal) => call(api.GET('/api/v1/users/{id}/audit', { params: { path: { id }, query: { limit: HISTORY_SIZE } }, signal })), [id]);
  return (
    <Async loaded={loaded}>
      {({ data }) =>
        data.entries.length === 0 ? (
          <Empty />
        ) : (
          <div class="table-wrap" tabIndex={0} role="region" aria-labelledby="user-history-title">
            <table class="history-table">
              <thead>
                <tr>
                  <th scope="col">{t('staff.history_when')}</th>
                  <th scope="col">{t('staff.history_action')}</th>
                  <th scope="col">{t('staff.history_actor')}</th>
                  <th scope="col">{t('staff.history_ip')}</th>
                </tr>
              </thead>
              <tbody>
                {data.entries.map((entry) => (
                  <tr key={entry.id}>
                    <td class="nowrap">{formatDateTime(locale, entry.created_at)}</td>
                    <td>
                      <code>{entry.action}</code>
                    </td>
                    <td class="wrap">{entry.actor_email ?? (entry.actor_id ? '—' : t('staff.history_platform'))}</td>
                    <td class="nowrap">{entry.ip ?? '—'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )
      }
    </Async>
  );
}

/** An account's history (its audit trail) in a dialog. */
function HistoryDialog({ user, onClose }: { user: User | undefined; onClose: () => void }) {
  const { t } = useI18n();
  const dialog = useModalDialog(user !== undefined, onClose);
  return (
    <dialog {...dialog} aria-labelledby="user-history-title" aria-describedby="user-history-body" class="history-dialog">
      {user ? (
        <>
          <h2 id="user-history-title">{t('staff.history_title', { email: user.email })}</h2>
          <p id="user-history-body">{t('staff.history_intro')}</p>
          <HistoryEntries id={user.id} />
          <div class="form-actions">
            <button type="button" onClick={onClose}>
              {t('action.close')}
            </button>
          </div>
        </>
      ) : null}
    </dialog>
  );
}

/** The accounts, with their state and what staff can do to each. */
export function AccountList({ listing: { loaded, pages }, onChanged }: { listing: Listing; onChanged: () => void }) {
  const { t, locale } = useI18n();
  const me = useMe();
  const [issued, setIssued] = useState<IssuedLink>();
  const [issueError, setIssueError] = useState<string>();
  const [confirming, setConfirming] = useState<User>();
  const [changed, setChanged] = useState<User>();
  const [deleting, setDeleting] = useState<User>();
  const [deleted, setDeleted] = useState<User>();
  const [history, setHistory] = useState<User>();
  const issue = async (user: User) => {
    setIssueError(undefined);
    try {
      const link = await load(api.POST('/api/v1/users/{id}/password-reset', { params: { path: { id: user.id } } }));
      setIssued({ email: user.email, url: link.url, expiresAt: link.expires_at });
    } catch (caught) {
      setIssued(undefined);
      setIssueError(caught instanceof Error ? caught.message : String(caught));
    }
  };
  return (
    <section aria-labelledby="staff-accounts">
      <h2 id="staff-accounts">{t('staff.accounts')}</h2>
      <p class="muted">{t('staff.delete_note')}</p>
      {issued ? (
        <div class="reset-link" role="group" aria-label={t('staff.reset_link')}>
          <Notice kind="info">{t('staff.reset_link_issued', { email: issued.email, when: formatDateTime(locale, issued.expiresAt) })}</Notice>
          <code>{issued.url}</code>
          <CopyButton text={issued.url} />
        </div>
      ) : null}
      {issueError ? <Notice kind="error">{issueError}</Notice> : null}
      {changed ? <Notice kind="ok">{t(changed.disabled ? 'staff.disabled_done' : 'staff.enabled_done', { email: changed.email })}</Notice> : null}
      {deleted ? <Notice kind="ok">{t('staff.deleted_done', { email: deleted.email })}</Notice> : null}
      <HistoryDialog user={history} onClose={() => setHistory(undefined)} />
      <DeleteDialog
        user={deleting}
        onClose={() => setDeleting(undefined)}
        onDeleted={(user) => {
          setDeleted(user);
          setDeleting(undefined);
          onChanged();
        }}
      />
      <StateDialog
        user={confirming}
        onClose={() => setConfirming(undefined)}
        onChanged={(user) => {
          setChanged(user);
          setConfirming(undefined);
          onChanged();
        }}
      />
      <Async loaded={loaded}>
        {({ data, meta }) =>
          data.users.length === 0 ? (
            <Empty />
          ) : (
            <>
              <div class="table-wrap" tabIndex={0} role="region" aria-label={t('staff.accounts')}>
                <table class="accounts-table">
                  <caption class="visually-hidden">{t('staff.accounts')}</caption>
                  <thead>
                    <tr>
                      <th scope="col">{t('staff.email')}</th>
                      <th scope="col">{t('staff.display_name')}</th>
                      <th scope="col">{t('staff.role')}</th>
                      <th scope="col">{t('staff.state')}</th>
                      <th scope="col">{t('staff.created_at')}</th>
                      <th scope="col">{t('account.session_actions')}</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.users.map((user) => (
                      <tr key={user.id} class={user.disabled ? 'account-disabled' : undefined}>
                        <td class="wrap">{user.email}</td>
                        <td class="wrap">{user.display_name ?? <span class="muted">—</span>}</td>
                        <td>{user.role === 'staff' ? <strong class="role-staff">{t('staff.role_staff')}</strong> : t('staff.role_user')}</td>
                        <td class="nowrap">
                          {user.disabled ? (
                            <span class="state-disabled" title={user.disabled_at ? formatDateTime(locale, user.disabled_at) : undefined}>
                              {t('staff.state_disabled')}
                            </span>
                          ) : (
                            t('staff.state_active')
                          )}
                        </td>
                        <td class="nowrap">{formatDateTime(locale, user.created_at)}</td>
                        <td>
                          <div class="account-actions">
                            <button
                              type="button"
                              class="button-quiet button-small"
                              aria-label={t('staff.history_label', { email: user.email })}
                              onClick={() => setHistory(user)}
                            >
                              {t('staff.history')}
                            </button>
                            {user.disabled ? null : (
                              <button
                                type="button"
                                class="button-quiet button-small"
                                aria-label={t('staff.reset_link_label', { email: user.email })}
                                onClick={() => void issue(user)}
                              >
                                {t('staff.reset_link')}
                              </button>
                            )}
                            {user.id === me.id ? (
                              <span class="muted">{t('staff.you')}</span>
                            ) : (
                              <button
                                type="button"
                                class="button-quiet button-small"
                                aria-label={t(user.disabled ? 'staff.enable_label' : 'staff.disable_label', { email: user.email })}
                                onClick={() => {
                                  setChanged(undefined);
                                  setDeleted(undefined);
                                  setConfirming(user);
                                }}
                              >
                                {t(user.disabled ? 'staff.enable' : 'staff.disable')}
                              </button>
                            )}
                            {user.id === me.id ? null : (
                              <button
                                type="button"
                                class="button-quiet button-small"
                                aria-label={t('staff.delete_label', { email: user.email })}
                                onClick={() => {
                                  setChanged(undefined);
                                  setDeleted(undefined);
                                  setDeleting(user);
                                }}
                              >
                                {t('staff.delete')}
                              </button>
                            )}
                          </div>
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
              <MetaPager pages={pages} meta={meta} />
            </>
          )
        }
      </Async>
    </section>
  );
}
