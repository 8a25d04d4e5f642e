// The parts of two-factor sign-in's section (two-factor.tsx): the recovery codes shown once, and the
// form of a change that needs the password and a code (turning it off, new recovery codes).
import { useState } from 'preact/hooks';
import { api, ApiError, load } from '../api/client.js';
import { useI18n } from '../app/i18n.js';
import { useMe } from '../app/session.js';
import { CopyButton, CurrentPasswordField, Field, fieldError, Notice } from '../app/ui.js';

/** The message of a refused step: shown under the field it concerns, else as a notice. */
export function errorFor(error: unknown, reasons: string[], field: string): string | undefined {
  if (error instanceof ApiError && typeof error.details.reason === 'string' && reasons.includes(error.details.reason)) return error.message;
  return fieldError(error, field);
}

/** The ten recovery codes, shown once: copy or download them, then confirm they are kept. */
export function RecoveryCodes({ codes, onDone }: { codes: string[]; onDone: () => void }) {
  const { t } = useI18n();
  const me = useMe();
  const text = codes.join('\n');
  const download = () => {
    const body = `${t('totp.codes_file_title', { email: me.email })}\n\n${text}\n`;
    const link = document.createElement('a');
    link.href = URL.createObjectURL(new Blob([body], { type: 'text/plain;charset=utf-8' }));
    link.download = 'linktrack-recovery-codes.txt';
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 1000);
  };
  return (
    <div class="totp-codes" role="group" aria-labelledby="totp-codes-title">
      <h3 id="totp-codes-title">{t('totp.codes_title')}</h3>
      <p>{t('totp.codes_intro')}</p>
      <ol class="totp-code-list">
        {codes.map((code) => (
          <li key={code}>
            <code>{code}</code>
          </li>
        ))}
      </ol>
      <div class="totp-actions">
        <CopyButton text={text} label={t('totp.codes_label')} />
        <button type="button" class="button-small" onClick={download}>
          {t('totp.codes_download')}
        </button>
        <button type="button" class="button-primary" onClick={onDone}>
          {t('totp.codes_done')}
        </button>
      </div>
    </div>
  );
}

/** Turning it off, or new recovery codes: the password and a code (or a recovery code). */
export function Reauthenticate({ action, onDone, onCancel }: { action: 'off' | 'regenerate'; onDone: (codes?: string[]) => void; onCancel: () => void }) {
  const { t } = useI18n();
  const [password, setPassword] = useState('');
  const [code, setCode] = useState('');
  const [recovery, setRecovery] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error>();
  const id = `totp-${action}`;

  const submit = async (event: Event) => {
    event.preventDefault();
    if (busy) return;
    setBusy(true);
    setError(undefined);
    const factor = recovery ? { recovery_code: code.trim() } : { code: code.replace(/\s/g, '') };
    try {
      if (action === 'off') {
        await load(api.DELETE('/api/v1/me/totp', { body: { password, ...factor } }));
        onDone();
      } else {
        onDone((await load(api.POST('/api/v1/me/totp/recovery-codes', { body: { password, ...factor } }))).recovery_codes);
      }
    } catch (caught) {
      setError(caught instanceof Error ? caught : new Error(String(caught)));
      setBusy(false);
    }
  };
  const passwordError = errorFor(error, ['current_password_wrong'], 'password');
  const codeError = errorFor(error, ['totp_code_wrong'], recovery ? 'recovery_code' : 'code');
  return (
    <form onSubmit={submit} aria-labelledby={`${id}-title`}>
      <h3 id={`${id}-title`}>{action === 'off' ? t('totp.turn_off') : t('totp.regenerate')}</h3>
      <p class="muted">{action === 'off' ? t('totp.turn_off_intro') : t('totp.regenerate_intro')}</p>
      <CurrentPasswordField id={`${id}-password`} label={t('account.current_password')} error={passwordError} value={password} onValue={setPassword} />
      <Field id={`${id}-code`} label={recovery ? t('totp.recovery_code') : t('totp.code')} error={codeError}>
        <input
          id={`${id}-code`}
          key={recovery ? 'recovery' : 'code'}
          type="text"
          inputMode={recovery ? 'text' : 'numeric'}
          autocomplete={recovery ? 'off' : 'one-time-code'}
          maxLength={recovery ? 64 : 7}
          required
          value={code}
          onInput={(event) => setCode(event.currentTarget.value)}
          aria-invalid={codeError ? true : undefined}
          aria-describedby={codeError ? `${id}-code-error` : undefined}
        />
      </Field>
      <button
        type="button"
        class="button-quiet button-small"
        onClick={() => {
          setRecovery(!recovery);
          setCode('');
        }}
      >
        {recovery ? t('totp.use_code') : t('totp.use_recovery')}
      </button>
      {error && !passwordError && !codeError ? <Notice kind="error">{error.message}</Notice> : null}
      <div class="totp-actions">
        <button type="submit" class={action === 'off' ? 'button-danger' : 'button-primary'} disabled={busy}>
          {busy ? (action === 'off' ? t('totp.turning_off') : t('totp.regenerating')) : action === 'off' ? t('totp.turn_off') : t('totp.regenerate')}
        </button>
        <button type="button" class="button-quiet" onClick={onCancel}>
          {t('totp.cancel')}
        </button>
      </div>
    </form>
  );
}
