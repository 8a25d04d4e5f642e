// Sign in: POST /auth/login sets the session cookie. A lockout (429) shows Retry-After as a
// countdown with the button disabled; with ENABLE_CAPTCHA, a 403 `captcha_required` carries an
// ALTCHA proof-of-work challenge that the browser solves (altcha-lib, Web Crypto) and sends with
// the next attempt. The challenge is self-hosted: nothing leaves for a third party.
import { solveChallenge } from 'altcha-lib';
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, load } from '../api/client.js';
import { formatWait } from '../app/format.js';
import { useI18n } from '../app/i18n.js';
import { useSession } from '../app/session.js';
import { LanguagePicker } from '../app/shell.js';
import { Notice } from '../app/ui.js';

interface Challenge {
  algorithm: string;
  challenge: string;
  maxnumber?: number;
  salt: string;
  signature: string;
}

/** Solves an ALTCHA challenge into the base64 payload the login takes as `captcha`. */
async function solve(challenge: Challenge): Promise<string> {
  const solution = await solveChallenge(challenge.challenge, challenge.salt, challenge.algorithm, challenge.maxnumber).promise;
  if (!solution) throw new Error('no solution');
  return btoa(
    JSON.stringify({
      algorithm: challenge.algorithm,
      challenge: challenge.challenge,
      number: solution.number,
      salt: challenge.salt,
      signature: challenge.signature,
    }),
  );
}

export function LoginPage({ reason }: { reason?: 'expired' | 'signed-out' }) {
  const { t, locale } = useI18n();
  const { refresh } = useSession();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const [lockedUntil, setLockedUntil] = useState<number>();
  const [now, setNow] = useState(Date.now());
  const [captcha, setCaptcha] = useState<'solving' | 'failed'>();

  useEffect(() => {
    document.title = `${t('login.title')} · linktrack`;
  }, [t]);
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

  /** One login attempt; a CAPTCHA demand is solved in the browser and the attempt made again with it, once. */
  const attempt = async (captchaPayload?: string): Promise<void> => {
    try {
      await load(api.POST('/auth/login', { body: { email, password, ...(captchaPayload ? { captcha: captchaPayload } : {}) } }));
      setCaptcha(undefined);
      await refresh();
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
          solved = await solve(caught.details.challenge as Challenge);
        } catch {
          setCaptcha('failed');
          return;
        }
        setCaptcha(undefined);
        await attempt(solved);
      } else {
        setCaptcha(undefined);
        setError(caught instanceof Error ? caught.message : String(caught));
      }
    }
  };

  const submit = async (event: Event) => {
    event.preventDefault();
    if (busy || lockedUntil !== undefined) return;
    setBusy(true);
    setError(undefined);
    try {
      await attempt();
    } finally {
      setBusy(false);
    }
  };

  return (
    <div class="login">
      <div class="login-top">
        <span class="brand">{t('app.name')}</span>
        <LanguagePicker />
      </div>
      <main class="login-card" id="content">
        <h1>{t('login.title')}</h1>
        <p class="muted">{t('login.intro')}</p>
        {reason === 'signed-out' ? <Notice kind="info">{t('login.signed_out')}</Notice> : null}
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
          <button type="submit" class="button-primary" disabled={busy || lockedUntil !== undefined || captcha === 'solving'}>
            {busy ? t('login.submitting') : t('login.submit')}
          </button>
        </form>
        <p class="login-forgot">
          <a href="/login/forgot">{t('forgot.link')}</a>
        </p>
      </main>
    </div>
  );
}
