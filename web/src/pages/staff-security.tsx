// The staff page's security settings (GET/PATCH /api/v1/settings/security): whether staff accounts
// must use two-factor sign-in. Saved as soon as the box is ticked or cleared.
import { useState } from 'preact/hooks';
import { api, load } from '../api/client.js';
import { useI18n } from '../app/i18n.js';
import { useSession } from '../app/session.js';
import { Async, Notice, useLoad } from '../app/ui.js';

export function SecuritySettings() {
  const { t } = useI18n();
  const { refresh } = useSession();
  const loaded = useLoad((signal) => load(api.GET('/api/v1/settings/security', { signal })), []);
  const [busy, setBusy] = useState(false);
  /** The value being saved: the box shows it at once, not the stored one until the answer. */
  const [saving, setSaving] = useState<boolean>();
  /** The stored value as the last change answered it (no reload: the box stays where it is). */
  const [saved, setSaved] = useState<boolean>();
  const [result, setResult] = useState<{ kind: 'ok' | 'error'; text: string }>();
  const save = async (required: boolean) => {
    setBusy(true);
    setSaving(required);
    setResult(undefined);
    try {
      const answer = await load(api.PATCH('/api/v1/settings/security', { body: { require_totp_for_staff: required } }));
      setSaved(answer.require_totp_for_staff);
      setResult({ kind: 'ok', text: t('staff.security_saved') });
      // This staff account may now be held to setting up two-factor sign-in itself: the account is read again.
      if (required) return void (await refresh());
    } catch (caught) {
      setResult({ kind: 'error', text: caught instanceof Error ? caught.message : String(caught) });
    } finally {
      setSaving(undefined);
      setBusy(false);
    }
  };
  return (
    <section class="card" aria-labelledby="staff-security">
      <h2 id="staff-security">{t('staff.security_title')}</h2>
      <Async loaded={loaded}>
        {(settings) => (
          <div class="field">
            <label class="checkbox">
              <input
                type="checkbox"
                checked={saving ?? saved ?? settings.require_totp_for_staff}
                disabled={busy}
                aria-describedby="staff-require-totp-hint"
                onChange={(event) => void save(event.currentTarget.checked)}
              />{' '}
              {t('staff.require_totp')}
            </label>
            <small class="hint" id="staff-require-totp-hint">
              {t('staff.require_totp_hint')}
            </small>
          </div>
        )}
      </Async>
      {result ? <Notice kind={result.kind}>{result.text}</Notice> : null}
    </section>
  );
}
