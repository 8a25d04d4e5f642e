// Links: the table of the owner's links (`/links`; subdomain, search and tag filters and the page
// number kept in the URL, so reload and back show the same rows) with create, clone, delete and
// QR; and one link (`/links/:id`) with its details, QR code and edit form.
import { useLocation, useRoute } from 'preact-iso';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, call, reachableSubdomains } from '../api/client.js';
import { formatDate, formatDateTime, formatNumber } from '../app/format.js';
import { useI18n } from '../app/i18n.js';
import { Async, CursorPager, Empty, Loading, Notice, PageHeader, useLoad, ErrorState } from '../app/ui.js';
import { LinkDetail } from './links-detail.js';
import { CreateLinkForm } from './links-form.js';
import { DeleteDialog, LinkClicks, LinkState, QrDialog, ShortUrl, TagList, type Link } from './links-parts.js';
import { ProtectedBadge } from './links-protection.js';
import './links.css';

const DEFAULT_LIMIT = 25;

export function LinksPage() {
  const { params } = useRoute();
  return params.id ? <LinkDetail id={params.id} /> : <LinksTable />;
}

/** The table's filters and page as the URL holds them. */
interface Filters {
  subdomain: string;
  q: string;
  tag: string;
  page: number;
  limit: number;
}

function filtersOf(query: Record<string, string>): Filters {
  const page = Number(query.page);
  const limit = Number(query.limit);
  return {
    subdomain: query.subdomain ?? '',
    q: query.q ?? '',
    tag: query.tag ?? '',
    page: Number.isInteger(page) && page >= 1 ? page : 1,
    limit: Number.isInteger(limit) && limit >= 1 && limit <= 200 ? limit : DEFAULT_LIMIT,
  };
}

function urlOf(filters: Filters): string {
  const search = new URLSearchParams();
  if (filters.subdomain) search.set('subdomain', filters.subdomain);
  if (filters.q) search.set('q', filters.q);
  if (filters.tag) search.set('tag', filters.tag);
  if (filters.page > 1) search.set('page', String(filters.page));
  if (filters.limit !== DEFAULT_LIMIT) search.set('limit', String(filters.limit));
  const text = search.toString();
  return text ? `/links?${text}` : '/links';
}

/** What the last action did, shown above the table. */
type Outcome = { kind: 'created' | 'cloned' | 'deleted'; link: Link } | { kind: 'error'; message: string };

function LinksTable() {
  const { t, locale } = useI18n();
  const { query, route } = useLocation();
  const filters = filtersOf(query);
  const [creating, setCreating] = useState(false);
  const [outcome, setOutcome] = useState<Outcome>();
  const [qrLink, setQrLink] = useState<Link>();
  const [deleting, setDeleting] = useState<Link>();
  const [deleteBusy, setDeleteBusy] = useState(false);
  const [deleteError, setDeleteError] = useState<string>();
  const [cloning, setCloning] = useState<string>();
  const newButton = useRef<HTMLButtonElement>(null);

  // The filter inputs follow the URL (back, a tag link), and apply on submit.
  const [q, setQ] = useState(filters.q);
  const [tag, setTag] = useState(filters.tag);
  useEffect(() => setQ(filters.q), [filters.q]);
  useEffect(() => setTag(filters.tag), [filters.tag]);

  const subdomains = useLoad((signal) => reachableSubdomains(signal, 'editor'), []);
  const links = useLoad(
    (signal) =>
      call(
        api.GET('/api/v1/links', {
          params: {
            query: {
              subdomain: filters.subdomain || undefined,
              q: filters.q.trim() || undefined,
              tag: filters.tag.trim() || undefined,
              page: filters.page,
              limit: filters.limit,
              include: 'clicks',
            },
          },
          signal,
        }),
        // The page and size this answer is for: the rows on screen stay those of the last answer
        // while the next loads, and the caption and pager must speak of them, not of the URL.
      ).then((answer) => ({ ...answer, page: filters.page, limit: filters.limit })),
    [filters.subdomain, filters.q, filters.tag, filters.page, filters.limit],
  );

  const go = (next: Partial<Filters>) => route(urlOf({ ...filters, page: 1, ...next }));
  const filtered = Boolean(filters.subdomain || filters.q || filters.tag);

  const clone = async (link: Link) => {
    if (cloning) return;
    setCloning(link.id);
    try {
      const { data } = await call(api.POST('/api/v1/links/{id}/duplicate', { params: { path: { id: link.id } } }));
      setOutcome({ kind: 'cloned', link: data });
      links.reload();
    } catch (caught) {
      setOutcome({ kind: 'error', message: caught instanceof Error ? caught.message : String(caught) });
    } finally {
      setCloning(undefined);
    }
  };

  const remove = async () => {
    if (!deleting || deleteBusy) return;
    setDeleteBusy(true);
    setDeleteError(undefined);
    try {
      await call(api.DELETE('/api/v1/links/{id}', { params: { path: { id: deleting.id } } }));
      setOutcome({ kind: 'deleted', link: deleting });
      setDeleting(undefined);
      links.reload();
    } catch (caught) {
      setDeleteError(caught instanceof Error ? caught.message : String(caught));
    } finally {
      setDeleteBusy(false);
    }
  };

  const hasSubdomains = subdomains.state === 'ready' && subdomains.data.subdomains.length > 0;

  return (
    <>
      <PageHeader title={t('links.title')}>
        {hasSubdomains ? (
          <button
            type="button"
            class="button-primary"
            ref={newButton}
            aria-expanded={creating}
            aria-controls={creating ? 'link-create' : undefined}
            onClick={() => {
              setOutcome(undefined);
              setCreating(!creating);
            }}
          >
            {t('links.new')}
          </button>
        ) : null}
        {hasSubdomains ? (
          <a class="button" href="/links/bulk">
            {t('bulk.nav')}
          </a>
        ) : null}
      </PageHeader>
      {subdomains.state === 'loading' ? <Loading /> : null}
      {subdomains.state === 'error' ? <ErrorState error={subdomains.error} retry={subdomains.reload} /> : null}
      {subdomains.state === 'ready' && !hasSubdomains ? (
        <Empty>
          <p>{t('links.no_subdomain')}</p>
          <a class="button button-primary" href="/subdomains">
            {t('links.claim_subdomain')}
          </a>
        </Empty>
      ) : null}
      {hasSubdomains ? (
        <>
          {creating ? (
            <CreateLinkForm
              subdomains={subdomains.data.subdomains}
              initialSubdomain={filters.subdomain}
              onCancel={() => {
                setCreating(false);
                newButton.current?.focus();
              }}
              onCreated={(link) => {
                setCreating(false);
                newButton.current?.focus();
                setOutcome({ kind: 'created', link });
                links.reload();
              }}
            />
          ) : null}
          {outcome ? <OutcomeNotice outcome={outcome} /> : null}
          <form
            class="filters"
            role="search"
            aria-label={t('links.filters')}
            onSubmit={(event) => {
              event.preventDefault();
              const form = event.currentTarget;
              go({ q: q.trim(), tag: tag.trim(), subdomain: (form.elements.namedItem('subdomain') as HTMLSelectElement).value });
            }}
          >
            <div class="field">
              <label for="links-filter-subdomain">{t('links.field.subdomain')}</label>
              <select
                id="links-filter-subdomain"
                name="subdomain"
                value={filters.subdomain}
                onChange={(event) => go({ subdomain: event.currentTarget.value, q: q.trim(), tag: tag.trim() })}
              >
                <option value="">{t('links.all_subdomains')}</option>
                {subdomains.data.subdomains.map((subdomain) => (
                  <option key={subdomain.name} value={subdomain.name}>
                    {subdomain.name}
                  </option>
                ))}
              </select>
            </div>
            <div class="field">
              <label for="links-filter-q">{t('links.search')}</label>
              <input id="links-filter-q" type="search" value={q} maxLength={200} onInput={(event) => setQ(event.currentTarget.value)} />
            </div>
            <div class="field">
              <label for="links-filter-tag">{t('links.tag')}</label>
              <input id="links-filter-tag" type="text" value={tag} maxLength={32} autocomplete="off" onInput={(event) => setTag(event.currentTarget.value)} />
            </div>
            <button type="submit">{t('action.search')}</button>
            {filtered ? (
              <a class="button" href="/links">
                {t('links.clear_filters')}
              </a>
            ) : null}
          </form>
          <Async loaded={links}>
            {({ data, meta, page: shownPage, limit: shownLimit }) => {
              const rows = data.links.filter((link): link is Link => 'id' in link);
              const total = typeof meta.total === 'number' ? meta.total : undefined;
              const pages = total !== undefined ? Math.max(1, Math.ceil(total / shownLimit)) : undefined;
              if (rows.length === 0 && shownPage === 1) {
                return <Empty>{filtered ? <p>{t('links.no_match')}</p> : <p>{t('links.empty')}</p>}</Empty>;
              }
              return (
                <>
                  <div class="table-wrap">
                    <table class="links-table">
                      <caption>
                        {t('links.caption')}
                        {pages !== undefined ? (
                          <span class="muted"> · {t('links.page_of', { page: formatNumber(locale, shownPage), pages: formatNumber(locale, pages) })}</span>
                        ) : null}
                      </caption>
                      <thead>
                        <tr>
                          <th scope="col">{t('links.col.short_url')}</th>
                          <th scope="col">{t('links.col.title')}</th>
                          <th scope="col">{t('links.col.target')}</th>
                          <th scope="col">{t('links.col.clicks')}</th>
                          <th scope="col">{t('links.col.tags')}</th>
                          <th scope="col">{t('links.col.state')}</th>
                          <th scope="col">{t('links.col.created')}</th>
                          <th scope="col">{t('links.col.actions')}</th>
                        </tr>
                      </thead>
                      <tbody>
                        {rows.length === 0 ? (
                          <tr>
                            <td colSpan={8} class="muted">
                              {t('links.page_empty')}
                            </td>
                          </tr>
                        ) : (
                          rows.map((link) => (
                            <tr key={link.id} data-link-id={link.id}>
                              <td>
                                <ShortUrl link={link} />
                              </td>
                              <td class="wrap">{link.title ?? <span class="muted">—</span>}</td>
                              <td>
                                {/* https is the rule, so it is left out of the narrow column; the whole URL is in the tooltip. */}
                                <span class="link-target" title={link.target_url}>
                                  {link.target_url.replace(/^https:\/\//, '')}
                                </span>
                              </td>
                              <td class="nowrap">
                                <LinkClicks link={link} />
                              </td>
                              <td>
                                <TagList tags={link.tags} />
                              </td>
                              <td>
                                <LinkState state={link.state} /> <ProtectedBadge link={link} />
                              </td>
                              <td class="nowrap created">
                                <time dateTime={link.created_at} title={formatDateTime(locale, link.created_at)}>
                                  {formatDate(locale, link.created_at)}
                                </time>
                              </td>
                              <td>
                                <div class="row-actions">
                                  <a class="button button-small" href={`/links/${encodeURIComponent(link.id)}`}>
                                    {t('action.edit')}
                                    <span class="visually-hidden"> {link.slug}</span>
                                  </a>
                                  <button type="button" class="button-small" onClick={() => void clone(link)} disabled={cloning === link.id}>
                                    {cloning === link.id ? t('links.cloning') : t('links.clone')}
                                    <span class="visually-hidden"> {link.slug}</span>
                                  </button>
                                  <button type="button" class="button-small" onClick={() => setQrLink(link)}>
                                    {t('links.qr')}
                                    <span class="visually-hidden"> {link.slug}</span>
                                  </button>
                                  <button
                                    type="button"
                                    class="button-small button-danger"
                                    onClick={() => {
                                      setDeleteError(undefined);
                                      setDeleting(link);
                                    }}
                                  >
                                    {t('action.delete')}
                                    <span class="visually-hidden"> {link.slug}</span>
                                  </button>
                                </div>
                              </td>
                            </tr>
                          ))
                        )}
                      </tbody>
                    </table>
                  </div>
                  <CursorPager
                    hasPrevious={shownPage > 1}
                    hasNext={meta.has_more === true}
                    onPrevious={() => route(urlOf({ ...filters, page: shownPage - 1 }))}
                    onNext={() => route(urlOf({ ...filters, page: shownPage + 1 }))}
                    total={total}
                  />
                </>
              );
            }}
          </Async>
        </>
      ) : null}
      <QrDialog link={qrLink} onClose={() => setQrLink(undefined)} />
      <DeleteDialog link={deleting} busy={deleteBusy} error={deleteError} onCancel={() => setDeleting(undefined)} onConfirm={() => void remove()} />
    </>
  );
}

function OutcomeNotice({ outcome }: { outcome: Outcome }) {
  const { t } = useI18n();
  if (outcome.kind === 'error') return <Notice kind="error">{outcome.message}</Notice>;
  const { link } = outcome;
  if (outcome.kind === 'deleted') return <Notice kind="ok">{t('links.deleted', { url: link.short_url })}</Notice>;
  return (
    <Notice kind="ok">
      {t(outcome.kind === 'created' ? 'links.created' : 'links.cloned', { url: link.short_url })}{' '}
      <a href={`/links/${encodeURIComponent(link.id)}`}>{t('links.open')}</a>
    </Notice>
  );
}
