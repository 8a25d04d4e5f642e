// A subdomain's custom domains, on its settings page (issue 40): attach one (POST /api/v1/domains),
// see the TXT record to create, check it now (POST …/verify), detach it (DELETE). Statuses as the
// API names them: pending, verified, failing (served until serve_until), lapsed.
import { useState } from 'preact/hooks';
import { api, ApiError, call, load, type Schemas } from '../api/client.js';
import { useI18n } from '../app/i18n.js';
import { formatDateTime } from '../app/format.js';
import { CopyButton, Empty, ErrorState, Field, fieldError, Loading, Notice, useLoad } from '../app/ui.js';
import type { UiKey } from '#shared/i18n/ui/index.js';

type Domain = Schemas['CustomDomain'];

/** The custom domains of one subdomain: the caller's list (every page), narrowed to it. */
async function domainsOf(subdomain: string, signal: AbortSignal): Promise<Domain[]> {
  const all: Domain[] = [];
  let cursor: string | undefined;
  for (;;) {
    const { data, meta } = await loadPage(cursor, signal);
    all.push(...data.domains);
    if (typeof meta.next_cursor !== 'string') break;
    cursor = meta.next_cursor;
  }
  return all.filter((domain) => domain.subdomain === subdomain);
}

const loadPage = (cursor: string | undefined, signal: AbortSignal) =>
  call(api.GET('/api/v1/domains', { params: { query: { limit: 100, ...(cursor ? { cursor } : {}) } }, signal }));

export function SubdomainDomains({ name, url }: { name: string; url: string }) {
  const { t } = useI18n();
  const loaded = useLoad((signal) => domainsOf(name, signal), [name]);
  const [notice, setNotice] = useState<string>();
  // A CNAME names a host, never a port.
  const host = new URL(url).hostname;
  return (
    <section class="card domains" aria-labelledby="domains-heading">
      <h2 id="domains-heading">{t('domains.heading')}</h2>
      <p class="muted">{t('domains.intro')}</p>
      {loaded.state === 'loading' ? <Loading /> : null}
      {loaded.state === 'error' ? <ErrorState error={loaded.error} retry={loaded.reload} /> : null}
      {loaded.state === 'ready' ? (
        <>
          {loaded.data.length === 0 ? (
            <Empty>
              <p>{t('domains.empty')}</p>
            </Empty>
          ) : (
            <ul class="domain-list" aria-label={t('domains.list_label', { name })}>
              {loaded.data.map((domain) => (
                <DomainItem
                  key={domain.domain}
                  domain={domain}
                  host={host}
                  onRemoved={() => {
                    setNotice(t('domains.removed', { domain: domain.domain }));
                    loaded.reload();
                  }}
                />
              ))}
            </ul>
          )}
          {notice ? <Notice kind="ok">{notice}</Notice> : null}
          <AddDomain
            subdomain={name}
            onAdded={() => {
              setNotice(undefined);
              loaded.reload();
            }}
          />
        </>
      ) : null}
    </section>
  );
}

function AddDomain({ subdomain, onAdded }: { subdomain: string; onAdded: () => void }) {
  const { t } = useI18n();
  const [value, setValue] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const id = 'domain-new';
  const onField = fieldError(error, 'domain') ?? (error instanceof ApiError && error.code === 'conflict' ? error.message : undefined);
  const submit = async (event: Event) => {
    event.preventDefault();
    if (busy || value.trim() === '') return;
    setBusy(true);
    setError(undefined);
    try {
      await load(api.POST('/api/v1/domains', { body: { domain: value.trim(), subdomain } }));
      setValue('');
      onAdded();
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="domain-add" onSubmit={submit}>
      <Field id={id} label={t('domains.add')} hint={t('domains.add_hint')} error={onField}>
        <input
          id={id}
          name="domain"
          value={value}
          placeholder="go.example.org"
          autocomplete="off"
          autocapitalize="none"
          spellcheck={false}
          inputMode="url"
          maxLength={253}
          aria-invalid={onField ? 'true' : undefined}
          aria-describedby={[`${id}-hint`, onField ? `${id}-error` : ''].filter(Boolean).join(' ')}
          onInput={(event) => setValue(event.currentTarget.value)}
        />
      </Field>
      <button type="submit" class="button-primary" disabled={busy || value.trim() === ''}>
        {busy ? t('domains.adding') : t('domains.add_button')}
      </button>
      {error !== undefined && !onField ? <Notice kind="error">{error instanceof Error ? error.message : String(error)}</Notice> : null}
    </form>
  );
}

function DomainItem({ domain: initial, host, onRemoved }: { domain: Domain; host: string; onRemoved: () => void }) {
  const { t, locale } = useI18n();
  const [domain, setDomain] = useState(initial);
  const [busy, setBusy] = useState<'verify' | 'remove'>();
  const [outcome, setOutcome] = useState<{ kind: 'ok' | 'info' | 'error'; text: string }>();
  const verify = async () => {
    setBusy('verify');
    setOutcome(undefined);
    try {
      const checked = await load(api.POST('/api/v1/domains/{domain}/verify', { params: { path: { domain: domain.domain } } }));
      setDomain(checked);
      setOutcome(
        checked.status === 'verified'
          ? { kind: 'ok', text: t('domains.verified_now', { domain: checked.domain }) }
          : { kind: 'info', text: t('domains.not_found_yet') },
      );
    } catch (caught) {
      setOutcome({ kind: 'error', text: caught instanceof Error ? caught.message : String(caught) });
    } finally {
      setBusy(undefined);
    }
  };
  const remove = async () => {
    if (!window.confirm(t('domains.remove_confirm', { domain: domain.domain }))) return;
    setBusy('remove');
    setOutcome(undefined);
    try {
      await load(api.DELETE('/api/v1/domains/{domain}', { params: { path: { domain: domain.domain } } }));
      onRemoved();
    } catch (caught) {
      setOutcome({ kind: 'error', text: caught instanceof Error ? caught.message : String(caught) });
      setBusy(undefined);
    }
  };
  const headingId = `domain-${domain.domain.replace(/[^a-z0-9-]/g, '-')}`;
  return (
    <li class="domain-item" aria-labelledby={headingId}>
      <div class="domain-head">
        <h3 id={headingId} class="mono">
          {domain.domain}
        </h3>
        <span class={`pill domain-status domain-${domain.status}`}>{t(`domains.status.${domain.status}` as UiKey)}</span>
      </div>
      {domain.status === 'failing' && domain.serve_until ? (
        <p class="domain-warning">{t('domains.serve_until', { when: formatDateTime(locale, domain.serve_until) })}</p>
      ) : null}
      {domain.status !== 'verified' ? (
        <div class="domain-record">
          <p>{t('domains.steps', { host })}</p>
          <dl>
            <div>
              <dt>{t('domains.record_name')}</dt>
              <dd>
                <code class="mono">{domain.verification.name}</code> <CopyButton text={domain.verification.name} />
              </dd>
            </div>
            <div>
              <dt>{t('domains.record_value')}</dt>
              <dd>
                <code class="mono">{domain.verification.value}</code> <CopyButton text={domain.verification.value} />
              </dd>
            </div>
          </dl>
        </div>
      ) : null}
      <p class="muted domain-check">
        {domain.checked_at ? t('domains.last_check', { when: formatDateTime(locale, domain.checked_at) }) : t('domains.never_checked')}
        {domain.check_error ? `: ${domain.check_error}` : null}
      </p>
      <div class="row-actions">
        <button type="button" onClick={() => void verify()} disabled={busy !== undefined}>
          {busy === 'verify' ? t('domains.verifying') : t('domains.verify')}
        </button>
        <button type="button" class="button-danger" onClick={() => void remove()} disabled={busy !== undefined}>
          {t('domains.remove')}
        </button>
      </div>
      {outcome ? <Notice kind={outcome.kind}>{outcome.text}</Notice> : null}
    </li>
  );
}
