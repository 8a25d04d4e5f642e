// API tokens: create one with scopes, an IP allowlist and an expiry (POST /api/v1/tokens), its
// secret shown this once with a copy button (the platform keeps only its hash, so it is gone from
// the page as soon as it is dismissed or the page reloads); the list with prefix, state and last
// use (GET /api/v1/tokens); revoke after a confirmation (DELETE /api/v1/tokens/{id}).
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, load, type Schemas } from '../api/client.js';
import { formatDate, formatDateTime, formatValidThrough, viewerTimeZone } from '../app/format.js';
import { useI18n, type UiKey } from '../app/i18n.js';
import { useMe } from '../app/session.js';
import { Async, CopyButton, Empty, Field, fieldError, Notice, PageHeader, useLoad, useModalDialog } from '../app/ui.js';
import './tokens.css';

type Token = Schemas['ApiToken'];
type Scope = Token['scopes'][number];

/** The scopes in the order the form offers them (the caller's own only: a token cannot exceed its maker). */
const SCOPE_ORDER: Scope[] = ['links:read', 'links:write', 'stats:read', 'subdomain:write', 'team:read', 'admin'];
const scopeKey = (scope: Scope) => `tokens.scope_${scope.replace(':', '_')}` as UiKey;

/** Midnight after a `yyyy-mm-dd` day in the viewer's zone, as ISO 8601: the token works through that day. */
function endOfDay(day: string): string | undefined {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(day);
  return match ? new Date(Number(match[1]), Number(match[2]) - 1, Number(match[3]) + 1).toISOString() : undefined;
}

/** The allowlist's field errors (`ip_allowlist.{index}`) as lines of the textarea. */
function allowlistErrors(error: unknown, lines: string[], t: ReturnType<typeof useI18n>['t']): string | undefined {
  if (!(error instanceof ApiError) || error.code !== 'validation_error') return undefined;
  const messages = Object.entries(error.details)
    .filter(([key]) => key === 'ip_allowlist' || key.startsWith('ip_allowlist.'))
    .map(([key, rule]) => {
      const index = Number(key.split('.')[1]);
      return Number.isInteger(index) ? t('tokens.allowlist_line', { line: `${index + 1} (${lines[index] ?? ''})`, message: String(rule) }) : String(rule);
    });
  return messages.length > 0 ? messages.join(' ') : undefined;
}

function CreateToken({ onCreated }: { onCreated: () => void }) {
  const { t } = useI18n();
  const me = useMe();
  const offered = SCOPE_ORDER.filter((scope) => me.scopes.includes(scope) && (scope !== 'admin' || me.role === 'staff'));
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<Scope[]>([]);
  const [allowlist, setAllowlist] = useState('');
  const [expires, setExpires] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error>();
  const [created, setCreated] = useState<Token & { token: string }>();
  const secretBox = useRef<HTMLDivElement>(null);

  useEffect(() => {
    if (created) secretBox.current?.focus();
  }, [created]);

  const lines = allowlist
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    setCreated(undefined);
    try {
      const expiresAt = endOfDay(expires);
      // The API creates a token with a past expiry already expired; the form asks for a future day instead.
      if (expiresAt && Date.parse(expiresAt) <= Date.now()) {
        throw new ApiError(422, { code: 'validation_error', message: t('tokens.expires_past'), details: { expires_at: t('tokens.expires_past') } });
      }
      const token = await load(
        api.POST('/api/v1/tokens', {
          body: { name, scopes, ...(lines.length > 0 ? { ip_allowlist: lines } : {}), ...(expiresAt ? { expires_at: expiresAt } : {}) },
        }),
      );
      setCreated(token);
      setName('');
      setScopes([]);
      setAllowlist('');
      setExpires('');
      onCreated();
    } catch (caught) {
      setError(caught instanceof Error ? caught : new Error(String(caught)));
    } finally {
      setBusy(false);
    }
  };

  const toggle = (scope: Scope, on: boolean) => setScopes((current) => (on ? [...current, scope] : current.filter((held) => held !== scope)));
  const scopesError = fieldError(error, 'scopes');
  const allowError = allowlistErrors(error, lines, t);
  const fieldMessages = [fieldError(error, 'name'), scopesError, allowError, fieldError(error, 'expires_at')].some(Boolean);

  return (
    <section class="card" aria-labelledby="token-create-heading">
      <h2 id="token-create-heading">{t('tokens.create_heading')}</h2>
      {created ? (
        <div class="token-created">
          <Notice kind="ok">{t('tokens.created', { name: created.name })}</Notice>
          <div class="secret" ref={secretBox} tabIndex={-1} role="group" aria-label={t('tokens.secret_label')}>
            <code>{created.token}</code>
            <CopyButton text={created.token} />
          </div>
          <p class="token-warning">
            <strong>{t('tokens.secret_warning')}</strong>
          </p>
          <button type="button" onClick={() => setCreated(undefined)}>
            {t('tokens.secret_done')}
          </button>
        </div>
      ) : null}
      <form onSubmit={submit}>
        <div class="form-grid">
          <Field id="token-name" label={t('tokens.name')} hint={t('tokens.name_hint')} error={fieldError(error, 'name')}>
            <input
              id="token-name"
              type="text"
              required
              maxLength={100}
              value={name}
              onInput={(event) => setName(event.currentTarget.value)}
              aria-describedby="token-name-hint"
            />
          </Field>
          <Field
            id="token-expires"
            label={t('tokens.expires')}
            hint={t('tokens.expires_hint', { zone: viewerTimeZone() })}
            error={fieldError(error, 'expires_at')}
          >
            <input
              id="token-expires"
              type="date"
              value={expires}
              onInput={(event) => setExpires(event.currentTarget.value)}
              aria-describedby="token-expires-hint"
            />
          </Field>
        </div>
        <fieldset class={scopesError ? 'field-invalid' : undefined} aria-describedby={scopesError ? 'token-scopes-error' : undefined}>
          <legend>{t('tokens.scopes')}</legend>
          {offered.map((scope) => (
            <label key={scope} class="checkbox">
              <input
                type="checkbox"
                name="scopes"
                value={scope}
                checked={scopes.includes(scope)}
                onChange={(event) => toggle(scope, event.currentTarget.checked)}
              />
              <span>{t(scopeKey(scope))}</span>
            </label>
          ))}
          {scopesError ? (
            <small class="field-error" id="token-scopes-error" role="alert">
              {scopesError}
            </small>
          ) : null}
        </fieldset>
        <div class={`field${allowError ? ' field-invalid' : ''}`}>
          <label for="token-allowlist">{t('tokens.allowlist')}</label>
          <textarea
            id="token-allowlist"
            rows={3}
            spellcheck={false}
            autocomplete="off"
            value={allowlist}
            onInput={(event) => setAllowlist(event.currentTarget.value)}
            aria-describedby={`token-allowlist-hint${allowError ? ' token-allowlist-error' : ''}`}
            aria-invalid={allowError ? 'true' : undefined}
          />
          <small class="hint" id="token-allowlist-hint">
            {t('tokens.allowlist_hint')}
          </small>
          {allowError ? (
            <small class="field-error" id="token-allowlist-error" role="alert">
              {allowError}
            </small>
          ) : null}
        </div>
        {error && !fieldMessages ? <Notice kind="error">{error.message}</Notice> : null}
        <div class="form-actions">
          <button type="submit" class="button-primary" disabled={busy}>
            {busy ? t('tokens.creating') : t('tokens.create')}
          </button>
        </div>
      </form>
    </section>
  );
}

function RevokeDialog({ token, onClose, onRevoked }: { token: Token | undefined; onClose: () => void; onRevoked: (token: Token) => void }) {
  const { t } = useI18n();
  const dialog = useModalDialog(token !== undefined, onClose);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  useEffect(() => setError(undefined), [token]);
  const revoke = async () => {
    if (!token) return;
    setBusy(true);
    setError(undefined);
    try {
      const revoked = await load(api.DELETE('/api/v1/tokens/{id}', { params: { path: { id: token.id } } }));
      onRevoked(revoked);
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
    } finally {
      setBusy(false);
    }
  };
  return (
    <dialog {...dialog} aria-labelledby="token-revoke-title">
      {token ? (
        <>
          <h2 id="token-revoke-title">{t('tokens.revoke_title', { name: token.name })}</h2>
          <p>
            <code>{token.prefix}</code>
          </p>
          <p>{t('tokens.revoke_body')}</p>
          {error ? <Notice kind="error">{error}</Notice> : null}
          <div class="form-actions">
            <button type="button" onClick={onClose}>
              {t('action.cancel')}
            </button>
            <button type="button" class="button-danger" onClick={revoke} disabled={busy}>
              {busy ? t('tokens.revoking') : t('tokens.revoke')}
            </button>
          </div>
        </>
      ) : null}
    </dialog>
  );
}

function TokenTable({ tokens, onRevoke }: { tokens: Token[]; onRevoke: (token: Token) => void }) {
  const { t, locale } = useI18n();
  return (
    <div class="table-wrap">
      <table class="tokens-table">
        <caption class="visually-hidden">{t('tokens.list_heading')}</caption>
        <thead>
          <tr>
            <th scope="col">{t('tokens.name')}</th>
            <th scope="col">{t('tokens.prefix')}</th>
            <th scope="col">{t('tokens.scopes')}</th>
            <th scope="col">{t('tokens.allowed_from')}</th>
            <th scope="col">{t('tokens.state')}</th>
            <th scope="col">{t('tokens.expires')}</th>
            <th scope="col">{t('tokens.last_used')}</th>
            <th scope="col">{t('tokens.actions')}</th>
          </tr>
        </thead>
        <tbody>
          {tokens.map((token) => (
            <tr key={token.id} data-token-id={token.id}>
              <th scope="row" class="token-name">
                {token.name}
                <br />
                <span class="muted">{t('tokens.created_on', { date: formatDate(locale, token.created_at) })}</span>
              </th>
              <td>
                <code>{token.prefix}</code>
              </td>
              <td>
                <ul class="token-list">
                  {token.scopes.map((scope) => (
                    <li key={scope}>
                      <code>{scope}</code>
                    </li>
                  ))}
                </ul>
              </td>
              <td>
                {token.ip_allowlist.length === 0 ? (
                  <span class="muted">{t('tokens.anywhere')}</span>
                ) : (
                  <ul class="token-list">
                    {token.ip_allowlist.map((range) => (
                      <li key={range}>
                        <code>{range}</code>
                      </li>
                    ))}
                  </ul>
                )}
              </td>
              <td>
                <span class={`token-state token-state-${token.state}`}>{t(`tokens.state_${token.state}` as UiKey)}</span>
              </td>
              <td class="token-when">{token.expires_at ? formatValidThrough(locale, token.expires_at) : <span class="muted">{t('tokens.no_expiry')}</span>}</td>
              <td class="token-when token-last-used">
                {token.last_used_at ? (
                  <>
                    {formatDateTime(locale, token.last_used_at)}
                    {token.last_used_ip ? (
                      <>
                        <br />
                        <span class="muted">{t('tokens.last_used_from', { ip: token.last_used_ip })}</span>
                      </>
                    ) : null}
                  </>
                ) : (
                  <span class="muted">{t('time.never')}</span>
                )}
              </td>
              <td>
                {token.state === 'active' ? (
                  <button
                    type="button"
                    class="button-small button-danger"
                    onClick={() => onRevoke(token)}
                    aria-label={t('tokens.revoke_named', { name: token.name })}
                  >
                    {t('tokens.revoke')}
                  </button>
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function TokensPage() {
  const { t } = useI18n();
  const tokens = useLoad((signal) => load(api.GET('/api/v1/tokens', { params: { query: { limit: 200 } }, signal })), []);
  const [revoking, setRevoking] = useState<Token>();
  const [revoked, setRevoked] = useState<Token>();
  return (
    <>
      <PageHeader title={t('tokens.title')} />
      <p class="muted">{t('tokens.intro')}</p>
      <CreateToken onCreated={tokens.reload} />
      <section aria-labelledby="token-list-heading">
        <h2 id="token-list-heading">{t('tokens.list_heading')}</h2>
        {revoked ? <Notice kind="ok">{t('tokens.revoked', { name: revoked.name })}</Notice> : null}
        <Async loaded={tokens}>
          {({ tokens: list }) =>
            list.length === 0 ? (
              <Empty>
                <p>{t('tokens.empty')}</p>
              </Empty>
            ) : (
              <TokenTable
                tokens={list}
                onRevoke={(token) => {
                  setRevoked(undefined);
                  setRevoking(token);
                }}
              />
            )
          }
        </Async>
      </section>
      <RevokeDialog
        token={revoking}
        onClose={() => setRevoking(undefined)}
        onRevoked={(token) => {
          setRevoked(token);
          setRevoking(undefined);
          tokens.reload();
        }}
      />
    </>
  );
}
