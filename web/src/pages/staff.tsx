// Staff: create accounts (POST /api/v1/users) and see every account, newest first
// (GET /api/v1/users). Both need the admin scope, which only staff sessions carry: anyone else gets
// the API's 403, shown as the forbidden state (the navigation hides the page from them too). The
// accounts table (staff-accounts.tsx) issues reset links and disables or re-enables accounts.
import { useState } from 'preact/hooks';
import { api, ApiError, load, type Schemas } from '../api/client.js';
import { useI18n } from '../app/i18n.js';
import { ErrorState, Field, fieldError, Loading, Notice, PageHeader } from '../app/ui.js';
import { AccountList, useListing } from './staff-accounts.js';
import './staff.css';
import { SecuritySettings } from './staff-security.js';

type User = Schemas['User'];
type Role = User['role'];
const MIN_PASSWORD = 12;

interface Draft {
  email: string;
  password: string;
  role: Role;
  displayName: string;
}
const EMPTY: Draft = { email: '', password: '', role: 'user', displayName: '' };

/**
 * The error of a field: its validation rule, or a conflict the server names on it (a registered
 * e-mail, a password of the breached-password lists): its rule, as a validation rule is shown.
 */
function errorOf(error: unknown, field: string): string | undefined {
  const rule = fieldError(error, field);
  if (rule) return rule;
  if (error instanceof ApiError && error.code === 'conflict' && field in error.details) {
    const detail = error.details[field];
    return typeof detail === 'string' ? detail : error.message;
  }
  return undefined;
}

function CreateAccount({ onCreated }: { onCreated: (user: User) => void }) {
  const { t } = useI18n();
  const [draft, setDraft] = useState<Draft>(EMPTY);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [created, setCreated] = useState<User>();
  const set = (changes: Partial<Draft>) => setDraft((current) => ({ ...current, ...changes }));

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    setCreated(undefined);
    try {
      const user = await load(
        api.POST('/api/v1/users', {
          body: {
            email: draft.email.trim(),
            password: draft.password,
            role: draft.role,
            ...(draft.displayName.trim() ? { display_name: draft.displayName.trim() } : {}),
          },
        }),
      );
      setCreated(user);
      setDraft(EMPTY);
      onCreated(user);
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  const fields = ['email', 'password', 'role', 'display_name'];
  const general = error !== undefined && !fields.some((field) => errorOf(error, field) !== undefined);
  const described = (id: string, field: string, hint = false) =>
    [hint ? `${id}-hint` : '', errorOf(error, field) ? `${id}-error` : ''].filter(Boolean).join(' ') || undefined;
  return (
    <section class="card" aria-labelledby="staff-create">
      <h2 id="staff-create">{t('staff.create')}</h2>
      <form onSubmit={submit} noValidate>
        <div class="form-grid">
          <Field id="staff-email" label={t('staff.email')} error={errorOf(error, 'email')}>
            <input
              id="staff-email"
              type="email"
              autocomplete="off"
              required
              value={draft.email}
              aria-invalid={errorOf(error, 'email') ? true : undefined}
              aria-describedby={described('staff-email', 'email')}
              onInput={(event) => set({ email: event.currentTarget.value })}
            />
          </Field>
          <Field id="staff-password" label={t('staff.password')} hint={t('staff.password_hint', { min: MIN_PASSWORD })} error={errorOf(error, 'password')}>
            <input
              id="staff-password"
              type="password"
              autocomplete="new-password"
              required
              minLength={MIN_PASSWORD}
              value={draft.password}
              aria-invalid={errorOf(error, 'password') ? true : undefined}
              aria-describedby={described('staff-password', 'password', true)}
              onInput={(event) => set({ password: event.currentTarget.value })}
            />
          </Field>
          <Field id="staff-display-name" label={`${t('staff.display_name')} (${t('field.optional')})`} error={errorOf(error, 'display_name')}>
            <input
              id="staff-display-name"
              type="text"
              maxLength={100}
              value={draft.displayName}
              aria-describedby={described('staff-display-name', 'display_name')}
              onInput={(event) => set({ displayName: event.currentTarget.value })}
            />
          </Field>
          <Field id="staff-role" label={t('staff.role')} hint={t('staff.role_hint')} error={errorOf(error, 'role')}>
            <select
              id="staff-role"
              value={draft.role}
              aria-describedby={described('staff-role', 'role', true)}
              onChange={(event) => set({ role: event.currentTarget.value as Role })}
            >
              <option value="user">{t('staff.role_user')}</option>
              <option value="staff">{t('staff.role_staff')}</option>
            </select>
          </Field>
        </div>
        {general ? <Notice kind="error">{error instanceof Error ? error.message : String(error)}</Notice> : null}
        {created ? <Notice kind="ok">{t('staff.created', { email: created.email })}</Notice> : null}
        <div class="form-actions">
          <button type="submit" class="button-primary" disabled={busy}>
            {busy ? t('action.saving') : t('staff.create_submit')}
          </button>
        </div>
      </form>
    </section>
  );
}

export function StaffPage() {
  const { t } = useI18n();
  const [round, setRound] = useState(0);
  const listing = useListing(round);
  const { loaded } = listing;
  // The API decides who may be here: anyone but staff gets 403 for the list, and only the forbidden state shows.
  const forbidden = loaded.state === 'error' && loaded.error instanceof ApiError && loaded.error.status === 403;
  const created = (user: User) => {
    setRound((value) => value + 1);
    // The new account is the newest: back to the first page, where it shows.
    listing.pages.reset();
    return user;
  };
  return (
    <>
      <PageHeader title={t('staff.title')} />
      {loaded.state === 'loading' ? (
        <Loading />
      ) : forbidden ? (
        <ErrorState error={loaded.error} />
      ) : (
        <>
          <p class="muted page-intro">{t('staff.intro')}</p>
          <CreateAccount onCreated={created} />
          <AccountList listing={listing} onChanged={() => setRound((value) => value + 1)} />
          <SecuritySettings />
        </>
      )}
    </>
  );
}
