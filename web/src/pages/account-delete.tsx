// Deleting one's own account (DELETE /api/v1/me): the data first (GET /api/v1/export as JSON, the
// caller's every visit), then a confirmation that asks the password, and the TOTP code when the
// account has two-factor sign-in, says it cannot be undone and shows the API's refusals; on success
// the dashboard returns to the sign-in page, which says the account was deleted.
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, load } from '../api/client.js';
import { useI18n } from '../app/i18n.js';
import { useSession } from '../app/session.js';
import { CurrentPasswordField, Field, Notice, useModalDialog } from '../app/ui.js';

/** The account's raw visits as one JSON file: the export the API answers for the caller's whole account. */
const EXPORT_URL = '/api/v1/export?format=json';

/** The names of the teams a refusal names by id, as far as the caller can read them. */
async function teamNames(ids: string[]): Promise<string> {
  try {
    const { teams } = await load(api.GET('/api/v1/teams'));
    return ids.map((id) => teams.find((team) => team.id === id)?.name ?? id).join(', ');
  } catch {
    return ids.join(', ');
  }
}

function DeleteDialog({ open, onClose }: { open: boolean; onClose: () => void }) {
  const { t } = useI18n();
  const { deleted } = useSession();
  const dialog = useModalDialog(open, onClose);
  const [password, setPassword] = useState('');
  const [code, setCode] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | Error>();
  /** What a refusal names: the teams (by name) or the subdomains in the way. */
  const [teams, setTeams] = useState<string>();
  const [totp, setTotp] = useState(false);
  useEffect(() => {
    if (!open) return;
    setPassword('');
    setCode('');
    setError(undefined);
    setTeams(undefined);
    // Whether the code field is needed: the account's two-factor state (a failure leaves it to the API's answer).
    load(api.GET('/api/v1/me/totp'))
      .then((status) => setTotp(status.enabled))
      .catch(() => undefined);
  }, [open]);

  const submit = async (event: Event) => {
    event.preventDefault();
    if (busy) return;
    setBusy(true);
    setError(undefined);
    setTeams(undefined);
    try {
      const totpCode = code.replace(/\s/g, '');
      await load(api.DELETE('/api/v1/me', { body: { password, ...(totpCode ? { totp_code: totpCode } : {}) } }));
      deleted();
    } catch (caught) {
      const failure = caught instanceof Error ? caught : new Error(String(caught));
      if (failure instanceof ApiError && (failure.details.reason === 'totp_required' || failure.details.reason === 'totp_code_wrong')) setTotp(true);
      if (failure instanceof ApiError && Array.isArray(failure.details.teams))
        setTeams(t('account.delete_teams', { teams: await teamNames(failure.details.teams as string[]) }));
      if (failure instanceof ApiError && Array.isArray(failure.details.subdomains))
        setTeams(t('account.delete_subdomains', { subdomains: failure.details.subdomains.join(', ') }));
      setError(failure);
      setBusy(false);
    }
  };

  const reason = error instanceof ApiError ? error.details.reason : undefined;
  const passwordError = reason === 'current_password_wrong' ? error!.message : undefined;
  const codeError = reason === 'totp_required' || reason === 'totp_code_wrong' ? error!.message : undefined;
  const otherError = error && !passwordError && !codeError ? error.message : undefined;
  return (
    <dialog {...dialog} aria-labelledby="account-delete-title" aria-describedby="account-delete-body">
      {open ? (
        <form onSubmit={submit}>
          <h2 id="account-delete-title">{t('account.delete_dialog_title')}</h2>
          <p id="account-delete-body">{t('account.delete_dialog_body')}</p>
          <CurrentPasswordField id="delete-password" label={t('account.current_password')} error={passwordError} value={password} onValue={setPassword} />
          {totp ? (
            <Field id="delete-totp" label={t('account.delete_totp')} hint={t('account.delete_totp_hint')} error={codeError}>
              <input
                id="delete-totp"
                autocomplete="one-time-code"
                required
                maxLength={64}
                value={code}
                onInput={(event) => setCode(event.currentTarget.value)}
                aria-invalid={codeError ? true : undefined}
                aria-describedby={codeError ? 'delete-totp-hint delete-totp-error' : 'delete-totp-hint'}
              />
            </Field>
          ) : null}
          {otherError ? (
            <Notice kind="error">
              {otherError}
              {teams ? ` ${teams}` : null}
            </Notice>
          ) : null}
          <div class="form-actions">
            <button type="button" onClick={onClose}>
              {t('action.cancel')}
            </button>
            <button type="submit" class="button-danger" disabled={busy}>
              {busy ? t('account.delete_submitting') : t('account.delete_confirm')}
            </button>
          </div>
        </form>
      ) : null}
    </dialog>
  );
}

/** The Account page's last section: download one's data, then delete the account. */
export function DeleteAccountSection() {
  const { t } = useI18n();
  const [open, setOpen] = useState(false);
  return (
    <section class="card account-section" aria-labelledby="delete-title">
      <h2 id="delete-title">{t('account.delete_title')}</h2>
      <p class="muted">{t('account.delete_intro')}</p>
      <div class="form-actions">
        <a class="button" href={EXPORT_URL} download>
          {t('account.delete_export')}
        </a>
        <button type="button" class="button-danger" onClick={() => setOpen(true)}>
          {t('account.delete_open')}
        </button>
      </div>
      <DeleteDialog open={open} onClose={() => setOpen(false)} />
    </section>
  );
}
