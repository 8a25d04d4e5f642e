// Sign in: POST /auth/login sets the session cookie; for an account with two-factor sign-in it
// answers a challenge instead, and a second step (POST /auth/login/totp) takes it with a code from
// the authenticator app or a recovery code. A lockout (429) shows Retry-After as a countdown with the
// button disabled; with ENABLE_CAPTCHA, a 403 `captcha_required` on either step carries an ALTCHA
// proof-of-work challenge that the browser solves and sends with the step's next attempt.
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, load } from '../api/client.js';
import { solveCaptcha, type CaptchaChallenge } from '../app/captcha.js';
import { formatWait } from '../app/format.js';
import { useI18n } from '../app/i18n.js';
import { useSession } from '../app/session.js';
import { SignedOutCard } from '../app/signed-out-card.js';
import { Notice } from '../app/ui.js';

export function LoginPage({ reason }: { reason?: 'expired' | 'signed-out' | 'deleted' }) {
  const { t, locale } = useI18n();
  const { refresh } = useSession();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const [lockedUntil, setLockedUntil] = useState<number>();
  const [now, setNow] = useState(Date.now());
  const [captcha, setCaptcha] = useState<'solving' | 'failed'>();
  /** The second step's challenge, once the password was right for an account with two-factor sign-in. */
  const [challenge, setChallenge] = useState<string>();
  const [recovery, setRecovery] = useState(false);
  const [code, setCode] = useState('');
  // The second step replaces the form: the focus goes to its field (described by the step's intro,
  // so a screen reader says where it is), ready for the code; again when switching to a recovery code.
  useEffect(() => {
    if (challenge !== undefined) document.getElementById('login-code')?.focus();
  }, [challenge !== undefined, recovery]);

  useEffect(() => {
    if (lockedUntil === undefined) return;
    const timer = setInterval(() => {
      const current = Date.now();
      setNow(current);
      if (current >= lockedUntil) {
        setLockedUntil(undefined);
        setError(undefined);
      }
    }, 250);
    return () => clearInterval(timer);
  }, [lockedUntil]);

  const secondsLeft = lockedUntil === undefined ? 0 : Math.max(0, Math.ceil((lockedUntil - now) / 1000));

  /**
   * One attempt of a step; a CAPTCHA demand is solved in the browser and the attempt made again with
   * it, once. Answers the step's result, or undefined when the attempt was refused (and says why).
   */
  const attempt = async <T,>(send: (captcha?: string) => Promise<T>, captchaPayload?: string): Promise<T | undefined> => {
    try {
      const result = await send(captchaPayload);
      setCaptcha(undefined);
      return result;
    } catch (caught) {
      if (caught instanceof ApiError && caught.status === 429) {
        setCaptcha(undefined);
        const seconds = caught.retryAfter ?? 60;
        // One clock reading for both: two would show Retry-After + 1 for a moment.
        const at = Date.now();
        setNow(at);
        setLockedUntil(at + seconds * 1000);
        setError(caught.message);
      } else if (!captchaPayload && caught instanceof ApiError && caught.details.reason === 'captcha_required' && caught.details.challenge) {
        setCaptcha('solving');
        let solved: string;
        try {
          solved = await solveCaptcha(caught.details.challenge as CaptchaChallenge);
        } catch {
          setCaptcha('failed');
          return undefined;
        }
        setCaptcha(undefined);
        return attempt(send, solved);
      } else {
        setCaptcha(undefined);
        // A challenge that expired or was completed elsewhere: back to the password.
        if (caught instanceof ApiError && caught.details.reason === 'challenge_invalid') {
          setChallenge(undefined);
          setPassword('');
        }
        setError(caught instanceof Error ? caught.message : String(caught));
      }
      return undefined;
    }
  };

  const submit = async (event: Event) => {
    event.preventDefault();
    if (busy || lockedUntil !== undefined) return;
    setBusy(true);
    setError(undefined);
    try {
      if (challenge === undefined) {
        const result = await attempt((captchaPayload) =>
          load(api.POST('/auth/login', { body: { email, password, ...(captchaPayload ? { captcha: captchaPayload } : {}) } })),
        );
        if (result?.status === 'totp_required') {
          setChallenge(result.challenge);
          setCode('');
        } else if (result) await refresh();
      } else {
        const factor = recovery ? { recovery_code: code.trim() } : { code: code.replace(/\s/g, '') };
        const result = await attempt((captchaPayload) =>
          load(api.POST('/auth/login/totp', { body: { challenge, ...factor, ...(captchaPayload ? { captcha: captchaPayload } : {}) } })),
        );
        if (result) await refresh();
      }
    } finally {
      setBusy(false);
    }
  };

  const backToPassword = () => {
    setChallenge(undefined);
    setError(undefined);
    setPassword('');
  };

  const notices = (
    <>
      {lockedUntil !== undefined ? (
        <Notice kind="error">
          <span class="countdown" data-seconds={secondsLeft}>
            {t('login.locked', { when: formatWait(locale, secondsLeft) })}
          </span>
        </Notice>
      ) : error ? (
        <Notice kind="error">{error}</Notice>
      ) : null}
      {captcha === 'solving' ? <Notice kind="info">{t('login.captcha')}</Notice> : null}
      {captcha === 'failed' ? <Notice kind="error">{t('login.captcha_failed')}</Notice> : null}
    </>
  );
  const blocked = busy || lockedUntil !== undefined || captcha === 'solving';

  if (challenge !== undefined) {
    return (
      <SignedOutCard title={t('login.totp_title')}>
        <p class="muted" id="login-code-intro">
          {recovery ? t('login.totp_recovery_intro') : t('login.totp_intro')}
        </p>
        <form onSubmit={submit}>
          <div class="field">
            <label for="login-code">{recovery ? t('totp.recovery_code') : t('totp.code')}</label>
            {recovery ? (
              <input
                id="login-code"
                key="recovery"
                type="text"
                autocomplete="off"
                autocapitalize="none"
                spellcheck={false}
                required
                maxLength={64}
                value={code}
                onInput={(event) => setCode(event.currentTarget.value)}
                aria-describedby="login-code-intro"
              />
            ) : (
              <input
                id="login-code"
                key="code"
                type="text"
                inputMode="numeric"
                autocomplete="one-time-code"
                pattern="[0-9 ]{6,7}"
                required
                maxLength={7}
                value={code}
                onInput={(event) => setCode(event.currentTarget.value)}
                aria-describedby="login-code-intro login-code-hint"
              />
            )}
            {recovery ? null : (
              <small class="hint" id="login-code-hint">
                {t('totp.code_hint')}
              </small>
            )}
          </div>
          {notices}
          <button type="submit" class="button-primary" disabled={blocked}>
            {busy ? t('login.submitting') : t('login.totp_submit')}
          </button>
        </form>
        <p class="login-forgot login-links">
          <button
            type="button"
            class="button-quiet"
            onClick={() => {
              setRecovery(!recovery);
              setCode('');
              setError(undefined);
            }}
          >
            {recovery ? t('totp.use_code') : t('totp.use_recovery')}
          </button>
          <button type="button" class="button-quiet" onClick={backToPassword}>
            {t('login.totp_back')}
          </button>
        </p>
      </SignedOutCard>
    );
  }

  return (
    <SignedOutCard title={t('login.title')}>
      <p class="muted">{t('login.intro')}</p>
      {reason === 'signed-out' ? <Notice kind="info">{t('login.signed_out')}</Notice> : null}
      {reason === 'deleted' ? <Notice kind="ok">{t('account.deleted_done')}</Notice> : null}
      <form onSubmit={submit} noValidate={false}>
        <div class="field">
          <label for="login-email">{t('login.email')}</label>
          <input id="login-email" type="email" autocomplete="username" required value={email} onInput={(event) => setEmail(event.currentTarget.value)} />
        </div>
        <div class="field">
          <label for="login-password">{t('login.password')}</label>
          <input
            id="login-password"
            type="password"
            autocomplete="current-password"
            required
            value={password}
            onInput={(event) => setPassword(event.currentTarget.value)}
          />
        </div>
        {notices}
        <button type="submit" class="button-primary" disabled={blocked}>
          {busy ? t('login.submitting') : t('login.submit')}
        </button>
      </form>
      <p class="login-forgot">
        <a href="/login/forgot">{t('forgot.link')}</a>
      </p>
    </SignedOutCard>
  );
}
