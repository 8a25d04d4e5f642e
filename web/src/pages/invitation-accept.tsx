// The invitation link's page, /invitations/accept#token=…: the secret rides in the fragment, which
// the browser never sends, and is POSTed in a body (POST /api/v1/invitations/accept). Signed out, the
// shell keeps the fragment in this tab's sessionStorage across the sign-in and comes back here.
import { useState } from 'preact/hooks';
import { api, ApiError, load, type Schemas } from '../api/client.js';
import { useI18n, type UiKey } from '../app/i18n.js';
import { useMe } from '../app/session.js';
import { Notice, PageHeader } from '../app/ui.js';
import { roleKey } from './teams.js';

/** Where the fragment waits while its reader signs in. */
export const PENDING_INVITATION_KEY = 'linktrack:invitation';

/** The link's secret: from the fragment, or kept across a sign-in. */
function tokenOfLink(): string {
  const fromHash = new URLSearchParams(location.hash.replace(/^#/, '')).get('token');
  if (fromHash) return fromHash;
  try {
    return new URLSearchParams(sessionStorage.getItem(PENDING_INVITATION_KEY)?.replace(/^#/, '') ?? '').get('token') ?? '';
  } catch {
    return '';
  }
}

const REFUSALS = new Set(['invitation_used', 'invitation_revoked', 'invitation_expired', 'invitation_other_address', 'already_member']);

export function InvitationAcceptPage() {
  const { t } = useI18n();
  const me = useMe();
  const [token] = useState(tokenOfLink);
  const [busy, setBusy] = useState(false);
  const [joined, setJoined] = useState<Schemas['Team']>();
  const [refusal, setRefusal] = useState<string>();
  const accept = async () => {
    setBusy(true);
    setRefusal(undefined);
    try {
      setJoined(await load(api.POST('/api/v1/invitations/accept', { body: { token } })));
      try {
        sessionStorage.removeItem(PENDING_INVITATION_KEY);
      } catch {
        // Storage refused: nothing was kept.
      }
    } catch (caught) {
      const reason = caught instanceof ApiError ? (caught.code === 'not_found' ? 'not_found' : String(caught.details.reason ?? '')) : '';
      setRefusal(
        reason === 'not_found' || REFUSALS.has(reason)
          ? t(`invite.refused_${reason}` as UiKey, { email: me.email })
          : caught instanceof Error
            ? caught.message
            : String(caught),
      );
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <PageHeader title={t('invite.title')} />
      {!token ? (
        <Notice kind="error">{t('invite.missing')}</Notice>
      ) : joined ? (
        <>
          <Notice kind="ok">{t('invite.accepted', { role: t(roleKey(joined.role)), name: joined.name })}</Notice>
          <p>
            <a href={`/teams/${joined.id}`}>{t('invite.open_team')}</a>
          </p>
        </>
      ) : (
        <section class="card">
          <p>{t('invite.body', { email: me.email })}</p>
          {refusal ? <Notice kind="error">{refusal}</Notice> : null}
          <button type="button" class="button-primary" disabled={busy} onClick={() => void accept()}>
            {busy ? t('invite.accepting') : t('invite.accept')}
          </button>
        </section>
      )}
    </>
  );
}
