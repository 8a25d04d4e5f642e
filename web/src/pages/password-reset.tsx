// Forgotten password: ask for a link by e-mail (POST /auth/password-reset, the same answer for any
// address), and the page the link opens (`/login/reset#token=…`), which sets a new password with it
// (POST /auth/password-reset/confirm). The token sits in the URL's fragment, which the browser never
// sends to the server; the page takes it out of the address bar and history at once.
import { useState } from 'preact/hooks';
import { api, ApiError, load } from '../api/client.js';
import { useI18n } from '../app/i18n.js';
import { useSession } from '../app/session.js';
import { SignedOutCard } from '../app/signed-out-card.js';
import { Field, fieldError, Notice } from '../app/ui.js';

export function ForgotPasswordPage() {
  const { t } = useI18n();
  const [email, setEmail] = useState('');
  const [busy, setBusy] = useState(false);
  const [sent, setSent] = useState(false);
  const [error, setError] = useState<Error>();

  const submit = async (event: Event) => {
    event.preventDefault();
    if (busy) return;
    setBusy(true);
    setError(undefined);
    try {
      await load(api.POST('/auth/password-reset', { body: { email } }));
      setSent(true);
    } catch (caught) {
      setError(caught instanceof Error ? caught : new Error(String(caught)));
    } finally {
      setBusy(false);
    }
  };

  const emailError = fieldError(error, 'email');
  return (
    <SignedOutCard title={t('forgot.title')}>
      <p class="muted">{t('forgot.intro')}</p>
      <form onSubmit={submit}>
        <Field id="forgot-email" label={t('login.email')} error={emailError}>
          <input id="forgot-email" type="email" autocomplete="username" required value={email} onInput={(event) => setEmail(event.currentTarget.value)} />
        </Field>
        {sent ? <Notice kind="ok">{t('forgot.sent')}</Notice> : null}
        {error && !emailError ? <Notice kind="error">{error.message}</Notice> : null}
        <button type="submit" class="button-primary" disabled={busy}>
          {busy ? t('forgot.submitting') : t('forgot.submit')}
        </button>
      </form>
      <p>
        <a href="/login">{t('forgot.back')}</a>
      </p>
    </SignedOutCard>
  );
}

/** The token of the link the page was opened with, taken out of the address bar (and so out of history). */
function takeToken(): string | undefined {
  const token = new URLSearchParams(location.hash.slice(1)).get('token') ?? undefined;
  if (location.hash) history.replaceState(history.state, '', `${location.pathname}${location.search}`);
  return token || undefined;
}

export function ResetPasswordPage() {
  const { t } = useI18n();
  const { refresh } = useSession();
  const [token] = useState(takeToken);
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState(false);
  const [error, setError] = useState<Error>();

  const submit = async (event: Event) => {
    event.preventDefault();
    if (busy || !token) return;
    setBusy(true);
    setError(undefined);
    try {
      await load(api.POST('/auth/password-reset/confirm', { body: { token, password } }));
      setDone(true);
      setPassword('');
      // Every session of the account was signed out, this browser's included if it had one.
      await refresh();
    } catch (caught) {
      setError(caught instanceof Error ? caught : new Error(String(caught)));
    } finally {
      setBusy(false);
    }
  };

  const linkRefused = error instanceof ApiError && typeof error.details.reason === 'string' && error.details.reason.startsWith('reset_link_');
  const passwordError =
    error instanceof ApiError && error.code === 'conflict' && typeof error.details.password === 'string'
      ? error.details.password
      : fieldError(error, 'password');
  return (
    <SignedOutCard title={t('reset.title')}>
      {!token ? (
        <>
          <Notice kind="error">{t('reset.no_token')}</Notice>
          <p>
            <a href="/login/forgot">{t('reset.ask_again')}</a>
          </p>
        </>
      ) : done ? (
        <>
          <Notice kind="ok">{t('reset.done')}</Notice>
          <p>
            <a href="/login" class="button button-primary">
              {t('reset.sign_in')}
            </a>
          </p>
        </>
      ) : (
        <>
          <p class="muted">{t('reset.intro')}</p>
          <form onSubmit={submit}>
            <Field id="reset-password" label={t('account.new_password')} hint={t('account.new_password_hint')} error={passwordError}>
              <input
                id="reset-password"
                type="password"
                autocomplete="new-password"
                required
                minLength={12}
                maxLength={256}
                value={password}
                onInput={(event) => setPassword(event.currentTarget.value)}
                aria-invalid={passwordError ? true : undefined}
                aria-describedby={passwordError ? 'reset-password-hint reset-password-error' : 'reset-password-hint'}
              />
            </Field>
            {error && !passwordError ? <Notice kind="error">{error.message}</Notice> : null}
            {linkRefused ? (
              <p>
                <a href="/login/forgot">{t('reset.ask_again')}</a>
              </p>
            ) : null}
            <button type="submit" class="button-primary" disabled={busy || linkRefused}>
              {busy ? t('reset.submitting') : t('reset.submit')}
            </button>
          </form>
        </>
      )}
    </SignedOutCard>
  );
}
