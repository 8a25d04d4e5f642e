// Attacks: the probes that hit the owner's subdomains (GET /api/v1/visits?kind=attack): kind of
// attack, path, address, country and time, filtered by subdomain (kept in the URL query), cursor
// paged. The path and query are what the prober sent: shown as text.
import { useEffect, useState } from 'preact/hooks';
import { api, call } from '../api/client.js';
import { formatDateTime } from '../app/format.js';
import { useI18n } from '../app/i18n.js';
import { Async, Empty, Field, MetaPager, PageHeader, useCursorPages, useLoad } from '../app/ui.js';
import {
  Addresses,
  attackTypeLabel,
  DEFAULT_PAGE_SIZE,
  pageSizeOf,
  SubdomainSelect,
  urlWith,
  useQueryKey,
  UserAgent,
  useSubdomainNames,
  type VisitRow,
} from './visits-parts.js';

function AttackTable({ attacks }: { attacks: VisitRow[] }) {
  const { t, locale } = useI18n();
  return (
    <div class="table-wrap">
      <table class="attacks-table">
        <caption class="visually-hidden">{t('attacks.table')}</caption>
        <thead>
          <tr>
            <th scope="col">{t('attacks.col.time')}</th>
            <th scope="col">{t('attacks.col.type')}</th>
            <th scope="col">{t('attacks.col.path')}</th>
            <th scope="col">{t('attacks.col.subdomain')}</th>
            <th scope="col">{t('attacks.col.ip')}</th>
            <th scope="col">{t('attacks.col.country')}</th>
            <th scope="col">{t('attacks.col.user_agent')}</th>
          </tr>
        </thead>
        <tbody>
          {attacks.map((attack, index) => (
            <tr key={attack.visit_id ?? `${attack.ts}-${index}`}>
              <td class="time-cell">{formatDateTime(locale, attack.ts, true)}</td>
              <td>
                <span class="kind kind-attack">{attackTypeLabel(t, attack.attack_type)}</span>
              </td>
              <td class="path">
                <code>
                  {attack.slug || '/'}
                  {attack.query ? `?${attack.query}` : ''}
                </code>
              </td>
              <td>{attack.subdomain || '—'}</td>
              <td>
                <Addresses visit={attack} />
              </td>
              <td>{attack.country || '—'}</td>
              <td class="wrap">
                <UserAgent value={attack.user_agent} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function AttacksPage() {
  const { t } = useI18n();
  const { query, key, route } = useQueryKey();
  const subdomain = query.subdomain || undefined;
  const limit = pageSizeOf(query.limit);
  const names = useSubdomainNames();
  const pages = useCursorPages([key]);
  const { cursor } = pages;
  const loaded = useLoad(
    async (signal) => {
      const { data, meta } = await call(api.GET('/api/v1/visits', { params: { query: { kind: 'attack', subdomain, limit, cursor } }, signal }));
      return { attacks: data.visits as VisitRow[], meta: meta };
    },
    [key, cursor],
  );
  const [draft, setDraft] = useState(subdomain ?? '');
  useEffect(() => setDraft(subdomain ?? ''), [subdomain]);
  const submit = (event: Event) => {
    event.preventDefault();
    route(urlWith('/attacks', { subdomain: draft || undefined, limit: limit === DEFAULT_PAGE_SIZE ? undefined : String(limit) }));
  };
  return (
    <>
      <PageHeader title={t('attacks.title')}>
        <button type="button" onClick={loaded.reload}>
          {t('attacks.refresh')}
        </button>
      </PageHeader>
      <p class="muted">{t('attacks.intro')}</p>
      <form class="filters visit-filters" aria-label={t('attacks.filters')} onSubmit={submit}>
        <Field id="attacks-subdomain" label={t('visits.filter.subdomain')}>
          <SubdomainSelect id="attacks-subdomain" value={draft} names={names} onChange={setDraft} />
        </Field>
        <div class="form-actions">
          <button type="submit" class="button-primary">
            {t('visits.filter.apply')}
          </button>
        </div>
      </form>
      <Async loaded={loaded}>
        {({ attacks, meta }) => (
          <>
            {attacks.length === 0 ? (
              <Empty>
                <p>{t('attacks.empty')}</p>
              </Empty>
            ) : (
              <AttackTable attacks={attacks} />
            )}
            {attacks.length > 0 || pages.hasPrevious ? <MetaPager pages={pages} meta={meta} /> : null}
          </>
        )}
      </Async>
    </>
  );
}
