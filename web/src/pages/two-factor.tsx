// Two-factor sign-in on the account page (GET/POST/DELETE /api/v1/me/totp): set it up (the current
// password, then the QR code and its key as text, then a first code), the recovery codes shown once
// (copy, download), turn it off or get new recovery codes (the password and a code or recovery code).
// Also the page a staff account sees while staff must have it and it has not set it up yet.
import { useState } from 'preact/hooks';
import { api, load } from '../api/client.js';
import { formatDateTime } from '../app/format.js';
import { useI18n } from '../app/i18n.js';
import { useSession } from '../app/session.js';
import { LanguagePicker } from '../app/shell.js';
import { Async, CopyButton, CurrentPasswordField, Field, Notice, useLoad } from '../app/ui.js';
import { errorFor, Reauthenticate, RecoveryCodes } from './two-factor-parts.js';
import './two-factor.css';

type Enrolment = { secret: string; otpauth_uri: string; qr_code: string };

/** Setting it up: the password, then the QR code and key, then a first code. */
function Enrol({ onEnabled, onCancel }: { onEnabled: (codes: string[]) => void; onCancel?: () => void }) {
  const { t } = useI18n();
  const [password, setPassword] = useState('');
  const [code, setCode] = useState('');
  const [enrolment, setEnrolment] = useState<Enrolment>();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error>();

  const run = async (event: Event, step: () => Promise<void>) => {
    event.preventDefault();
    if (busy) return;
    setBusy(true);
    setError(undefined);
    try {
      await step();
    } catch (caught) {
      setError(caught instanceof Error ? caught : new Error(String(caught)));
    } finally {
      setBusy(false);
    }
  };
  const start = (event: Event) =>
    run(event, async () => {
      setEnrolment(await load(api.POST('/api/v1/me/totp', { body: { password } })));
      setPassword('');
    });
  const confirm = (event: Event) =>
    run(event, async () => {
      const done = await load(api.POST('/api/v1/me/totp/confirm', { body: { code: code.replace(/\s/g, '') } }));
      onEnabled(done.recovery_codes);
    });

  if (!enrolment) {
    const passwordError = errorFor(error, ['current_password_wrong'], 'password');
    return (
      <form onSubmit={start}>
        <CurrentPasswordField
          id="totp-password"
          label={t('account.current_password')}
          hint={t('totp.password_hint')}
          error={passwordError}
          value={password}
          onValue={setPassword}
        />
        {error && !passwordError ? <Notice kind="error">{error.message}</Notice> : null}
        <div class="totp-actions">
          <button type="submit" class="button-primary" disabled={busy}>
            {busy ? t('totp.starting') : t('totp.start')}
          </button>
          {onCancel ? (
            <button type="button" class="button-quiet" onClick={onCancel}>
              {t('totp.cancel')}
            </button>
          ) : null}
        </div>
      </form>
    );
  }
  const codeError = errorFor(error, ['totp_code_wrong'], 'code');
  return (
    <form onSubmit={confirm} class="totp-enrol">
      <p>{t('totp.scan')}</p>
      <img class="totp-qr" src={enrolment.qr_code} width={264} height={264} alt={t('totp.qr_alt')} />
      <p>{t('totp.manual')}</p>
      <p class="totp-secret">
        <code>{enrolment.secret.replace(/(.{4})/g, '$1 ').trim()}</code> <CopyButton text={enrolment.secret} label={t('totp.secret_label')} />
      </p>
      <p>{t('totp.enter_code')}</p>
      <Field id="totp-code" label={t('totp.code')} hint={t('totp.code_hint')} error={codeError}>
        <input
          id="totp-code"
          type="text"
          inputMode="numeric"
          autocomplete="one-time-code"
          pattern="[0-9 ]{6,7}"
          maxLength={7}
          required
          value={code}
          onInput={(event) => setCode(event.currentTarget.value)}
          aria-invalid={codeError ? true : undefined}
          aria-describedby={codeError ? 'totp-code-hint totp-code-error' : 'totp-code-hint'}
        />
      </Field>
      {error && !codeError ? <Notice kind="error">{error.message}</Notice> : null}
      <div class="totp-actions">
        <button type="submit" class="button-primary" disabled={busy}>
          {busy ? t('totp.confirming') : t('totp.confirm')}
        </button>
        <button type="button" class="button-quiet" onClick={() => (onCancel ? onCancel() : setEnrolment(undefined))}>
          {t('totp.cancel')}
        </button>
      </div>
    </form>
  );
}

/** The account page's section: the status, and the one action under way. */
export function TwoFactorSection({ onEnabled }: { onEnabled?: () => void }) {
  const { t, locale } = useI18n();
  const loaded = useLoad((signal) => load(api.GET('/api/v1/me/totp', { signal })), []);
  const [action, setAction] = useState<'enrol' | 'off' | 'regenerate'>();
  const [codes, setCodes] = useState<string[]>();
  const [notice, setNotice] = useState<string>();
  const finish = (next?: string[]) => {
    setAction(undefined);
    setCodes(next);
    loaded.reload();
  };
  return (
    <section class="card account-section" aria-labelledby="totp-title">
      <h2 id="totp-title">{t('totp.title')}</h2>
      <p class="muted">{t('totp.intro')}</p>
      {notice ? <Notice kind="ok">{notice}</Notice> : null}
      <Async loaded={loaded}>
        {(status) =>
          codes ? (
            <RecoveryCodes
              codes={codes}
              onDone={() => {
                setCodes(undefined);
                onEnabled?.();
              }}
            />
          ) : (
            <>
              <p class="totp-status">
                {status.enabled && status.enrolled_at
                  ? t('totp.status_on', { when: formatDateTime(locale, status.enrolled_at), count: status.recovery_codes_left })
                  : t('totp.status_off')}
              </p>
              {action === 'enrol' || (!status.enabled && onEnabled) ? (
                <Enrol
                  onEnabled={(next) => {
                    setNotice(undefined);
                    finish(next);
                  }}
                  onCancel={onEnabled ? undefined : () => setAction(undefined)}
                />
              ) : action === 'off' || action === 'regenerate' ? (
                <Reauthenticate
                  action={action}
                  onDone={(next) => {
                    setNotice(action === 'off' ? t('totp.turned_off') : undefined);
                    finish(next);
                  }}
                  onCancel={() => setAction(undefined)}
                />
              ) : status.enabled ? (
                <div class="totp-actions">
                  <button type="button" onClick={() => setAction('regenerate')}>
                    {t('totp.regenerate')}
                  </button>
                  <button type="button" class="button-danger" onClick={() => setAction('off')}>
                    {t('totp.turn_off')}
                  </button>
                </div>
              ) : (
                <button type="button" class="button-primary" onClick={() => setAction('enrol')}>
                  {t('totp.start')}
                </button>
              )}
            </>
          )
        }
      </Async>
    </section>
  );
}

/** What a staff account sees while staff must use two-factor sign-in and it has not set it up: only that, and signing out. */
export function TotpRequiredPage() {
  const { t } = useI18n();
  const { refresh, signOut } = useSession();
  return (
    <div class="login totp-required">
      <div class="login-top">
        <span class="brand">{t('app.name')}</span>
        <LanguagePicker />
      </div>
      <main class="totp-required-main" id="content">
        <h1>{t('totp.required_title')}</h1>
        <p class="muted">{t('totp.required_intro')}</p>
        <TwoFactorSection onEnabled={() => void refresh()} />
        <button type="button" class="button-quiet" onClick={() => void signOut()}>
          {t('totp.sign_out')}
        </button>
      </main>
    </div>
  );
}
