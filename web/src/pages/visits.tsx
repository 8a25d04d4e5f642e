// Visits: the owner's visit list (GET /api/v1/visits) with its filters kept in the URL query (so
// reload and back keep them), cursor paging, and live updates on the first page: while the tab is
// visible, a poll every 1.5 s asks for the visits since a little before the newest shown and
// prepends the ones not shown yet (by visit id), highlighted and announced.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, ApiError, call, load } from '../api/client.js';
import { formatDateTime, formatNumber } from '../app/format.js';
import { useI18n, type UiKey } from '../app/i18n.js';
import { Empty, ErrorState, Field, fieldError, Loading, MetaPager, PageHeader, useCursorPages, useLoad } from '../app/ui.js';
import {
  Addresses,
  attackTypeLabel,
  DEFAULT_PAGE_SIZE,
  isoOfLocalInput,
  localInputOf,
  PAGE_SIZES,
  pageSizeOf,
  SubdomainSelect,
  urlWith,
  useQueryKey,
  UserAgent,
  useSubdomainNames,
  VISIT_KINDS,
  type VisitRow,
} from './visits-parts.js';

type Kind = (typeof VISIT_KINDS)[number];

/** The list's filters as the URL query holds them (validated loosely: the API has the last word). */
interface Filters {
  subdomain?: string;
  link_id?: string;
  country?: string;
  is_bot?: 'true' | 'false';
  kind?: Kind;
  since?: string;
  until?: string;
  limit: number;
  /** Value filters (a cell of the table adds one; chips remove them). */
  browser?: string;
  os?: string;
  device?: string;
  referrer_host?: string;
  utm_source?: string;
  utm_medium?: string;
  utm_campaign?: string;
}

/** The filters a cell of the table adds; all but country (a field of the form) show as chips, in this order. */
const VALUE_FILTERS = ['browser', 'os', 'device', 'referrer_host', 'utm_source', 'utm_medium', 'utm_campaign'] as const;
type ValueFilter = (typeof VALUE_FILTERS)[number] | 'country';
const VALUE_FILTER_LABELS: Record<(typeof VALUE_FILTERS)[number], UiKey> = {
  browser: 'visits.value.browser',
  os: 'visits.value.os',
  device: 'visits.value.device',
  referrer_host: 'visits.value.referrer_host',
  utm_source: 'visits.value.utm_source',
  utm_medium: 'visits.value.utm_medium',
  utm_campaign: 'visits.value.utm_campaign',
};

function filtersOf(query: Record<string, string>): Filters {
  const text = (value: string | undefined) => (value ? value : undefined);
  return {
    subdomain: text(query.subdomain),
    link_id: text(query.link_id),
    country: text(query.country),
    is_bot: query.is_bot === 'true' || query.is_bot === 'false' ? query.is_bot : undefined,
    kind: (VISIT_KINDS as readonly string[]).includes(query.kind ?? '') ? (query.kind as Kind) : undefined,
    since: text(query.since),
    until: text(query.until),
    limit: pageSizeOf(query.limit),
    browser: text(query.browser),
    os: text(query.os),
    device: text(query.device),
    referrer_host: text(query.referrer_host),
    utm_source: text(query.utm_source),
    utm_medium: text(query.utm_medium),
    utm_campaign: text(query.utm_campaign),
  };
}

/** The list's address for these filters (the default page size left out). */
const visitsUrl = (filters: Filters) => urlWith('/visits', { ...filters, limit: filters.limit === DEFAULT_PAGE_SIZE ? undefined : String(filters.limit) });

const POLL_MS = 1_500;
/**
 * How far before the newest visit shown a poll looks: visits are stored in batches, not strictly in
 * the order of their time, so one made just before the newest can arrive after it. The overlap is
 * told apart by visit id.
 */
const LOOKBACK_MS = 15_000;
/** Pages a poll reads at most (200 visits each) before it waits for the next round. */
const POLL_PAGES = 3;
const HIGHLIGHT_MS = 4_000;

type ListQuery = Omit<Filters, 'limit'> & { limit: number; cursor?: string };

async function listVisits(query: ListQuery, signal: AbortSignal) {
  const { data, meta } = await call(api.GET('/api/v1/visits', { params: { query }, signal }));
  return { visits: data.visits as VisitRow[], meta: meta as { total?: number; next_cursor?: string | null }, asked: '' };
}

/** The visits matching the filters since `since` that are not in `known`, newest first. */
async function newVisits(filters: Omit<Filters, 'limit'>, since: string | undefined, known: Set<string>, signal: AbortSignal): Promise<VisitRow[]> {
  const found: VisitRow[] = [];
  let cursor: string | undefined;
  for (let round = 0; round < POLL_PAGES; round++) {
    const { visits, meta } = await listVisits({ ...filters, since, limit: 200, cursor }, signal);
    for (const visit of visits) if (visit.visit_id && !known.has(visit.visit_id)) found.push(visit);
    if (!meta.next_cursor) break;
    cursor = meta.next_cursor;
  }
  return found;
}

const byTimeDescending = (a: VisitRow, b: VisitRow) => Date.parse(b.ts) - Date.parse(a.ts);

/** The filter form's fields (all text, as the inputs hold them) for the applied filters. */
const draftOf = (filters: Filters) => ({
  subdomain: filters.subdomain ?? '',
  link_id: filters.link_id ?? '',
  country: filters.country ?? '',
  is_bot: filters.is_bot ?? '',
  kind: filters.kind ?? '',
  since: localInputOf(filters.since),
  until: localInputOf(filters.until),
  limit: String(filters.limit),
});

function FilterForm({ filters, error, onApply }: { filters: Filters; error: unknown; onApply: (filters: Filters) => void }) {
  const { t } = useI18n();
  const names = useSubdomainNames();
  const [draft, setDraft] = useState(() => draftOf(filters));
  const [backwards, setBackwards] = useState(false);
  // Back and forward change the URL under the form: it shows what is applied.
  useEffect(() => {
    setDraft(draftOf(filters));
  }, [JSON.stringify(filters)]);
  const links = useLoad(
    async (signal) =>
      draft.subdomain ? (await load(api.GET('/api/v1/links', { params: { query: { subdomain: draft.subdomain, limit: 200 } }, signal }))).links : [],
    [draft.subdomain],
  );
  const linkOptions = links.state === 'ready' ? links.data.flatMap((link) => ('id' in link ? [{ id: link.id, slug: link.slug }] : [])) : [];
  if (draft.link_id && !linkOptions.some((link) => link.id === draft.link_id)) linkOptions.unshift({ id: draft.link_id, slug: draft.link_id });
  const set = (name: keyof typeof draft) => (event: Event) => {
    const value = (event.currentTarget as HTMLInputElement | HTMLSelectElement).value;
    setDraft((previous) => ({ ...previous, [name]: value, ...(name === 'subdomain' ? { link_id: '' } : {}) }));
  };
  const sizes = PAGE_SIZES.includes(Number(draft.limit)) ? PAGE_SIZES : [...PAGE_SIZES, Number(draft.limit)].sort((a, b) => a - b);
  const submit = (event: Event) => {
    event.preventDefault();
    // A backwards range would list nothing (the API counts it as empty): said on its field instead.
    const since = isoOfLocalInput(draft.since);
    const until = isoOfLocalInput(draft.until);
    setBackwards(since !== undefined && until !== undefined && since >= until);
    if (since !== undefined && until !== undefined && since >= until) return;
    onApply({
      // The value filters the table's cells added stay (their chips remove them); country is a field.
      browser: filters.browser,
      os: filters.os,
      device: filters.device,
      referrer_host: filters.referrer_host,
      utm_source: filters.utm_source,
      utm_medium: filters.utm_medium,
      utm_campaign: filters.utm_campaign,
      subdomain: draft.subdomain || undefined,
      link_id: draft.link_id || undefined,
      country: draft.country.trim() || undefined,
      is_bot: draft.is_bot === 'true' || draft.is_bot === 'false' ? draft.is_bot : undefined,
      kind: (draft.kind || undefined) as Kind | undefined,
      since: isoOfLocalInput(draft.since),
      until: isoOfLocalInput(draft.until),
      limit: pageSizeOf(draft.limit),
    });
  };
  // The API's rules name its parameters; the fields say them in the viewer's words.
  const errorOf = (field: 'country' | 'since' | 'until') => {
    if (field === 'since' && backwards) return t('visits.filter.since_invalid');
    const rule = fieldError(error, field);
    if (!rule) return undefined;
    if (field === 'country') return t('visits.filter.country_invalid');
    if (field === 'since' && /before/.test(rule)) return t('visits.filter.since_invalid');
    return rule;
  };
  return (
    <form class="filters visit-filters" aria-label={t('visits.filters')} onSubmit={submit}>
      <Field id="visits-subdomain" label={t('visits.filter.subdomain')}>
        <SubdomainSelect
          id="visits-subdomain"
          value={draft.subdomain}
          names={names}
          onChange={(value) => setDraft((previous) => ({ ...previous, subdomain: value, link_id: '' }))}
        />
      </Field>
      <Field id="visits-link" label={t('visits.filter.link')} hint={draft.subdomain ? undefined : t('visits.filter.link_hint')}>
        <select
          id="visits-link"
          value={draft.link_id}
          onChange={set('link_id')}
          disabled={!draft.subdomain && !draft.link_id}
          aria-describedby={draft.subdomain ? undefined : 'visits-link-hint'}
        >
          <option value="">{t('visits.filter.any_link')}</option>
          {linkOptions.map((link) => (
            <option key={link.id} value={link.id}>
              {link.slug}
            </option>
          ))}
        </select>
      </Field>
      <Field id="visits-kind" label={t('visits.filter.kind')}>
        <select id="visits-kind" value={draft.kind} onChange={set('kind')}>
          <option value="">{t('visits.filter.kind_any')}</option>
          {VISIT_KINDS.map((kind) => (
            <option key={kind} value={kind}>
              {t(`visits.kind.${kind}` as UiKey)}
            </option>
          ))}
        </select>
      </Field>
      <Field id="visits-bot" label={t('visits.filter.bot')}>
        <select id="visits-bot" value={draft.is_bot} onChange={set('is_bot')}>
          <option value="">{t('visits.filter.bot_any')}</option>
          <option value="true">{t('visits.filter.bot_only')}</option>
          <option value="false">{t('visits.filter.bot_none')}</option>
        </select>
      </Field>
      <Field id="visits-country" label={t('visits.filter.country')} hint={t('visits.filter.country_hint')} error={errorOf('country')}>
        <input
          id="visits-country"
          class="country-input"
          value={draft.country}
          onInput={set('country')}
          maxLength={2}
          autocomplete="off"
          aria-invalid={errorOf('country') ? true : undefined}
          aria-describedby={errorOf('country') ? 'visits-country-hint visits-country-error' : 'visits-country-hint'}
        />
      </Field>
      <Field id="visits-limit" label={t('visits.filter.limit')}>
        <select id="visits-limit" value={draft.limit} onChange={set('limit')}>
          {sizes.map((size) => (
            <option key={size} value={String(size)}>
              {size}
            </option>
          ))}
        </select>
      </Field>
      <Field id="visits-since" label={t('visits.filter.since')} error={errorOf('since')}>
        <input
          id="visits-since"
          type="datetime-local"
          value={draft.since}
          onInput={set('since')}
          aria-invalid={errorOf('since') ? true : undefined}
          aria-describedby={errorOf('since') ? 'visits-since-error' : undefined}
        />
      </Field>
      <Field id="visits-until" label={t('visits.filter.until')} error={errorOf('until')}>
        <input
          id="visits-until"
          type="datetime-local"
          value={draft.until}
          onInput={set('until')}
          aria-invalid={errorOf('until') ? true : undefined}
          aria-describedby={errorOf('until') ? 'visits-until-error' : undefined}
        />
      </Field>
      <div class="form-actions">
        <button type="submit" class="button-primary">
          {t('visits.filter.apply')}
        </button>
        <a class="button" href="/visits">
          {t('visits.filter.reset')}
        </a>
      </div>
    </form>
  );
}

/** A value of a cell that filters the list by it (a link to the list with that filter added), or plain text once it is applied. */
function FilterValue({ filters, name, value, children }: { filters: Filters; name: ValueFilter; value: string | undefined; children?: string }) {
  const { t } = useI18n();
  const shown = children ?? value ?? '';
  if (!value || filters[name] !== undefined) return <span class="cell-line">{shown}</span>;
  return (
    <a class="cell-line filter-value" href={visitsUrl({ ...filters, [name]: value })} title={t('visits.filter_by', { name: shown })}>
      {shown}
      <span class="visually-hidden"> ({t('visits.filter_by', { name: shown })})</span>
    </a>
  );
}

/** The value filters in force as chips: each removes itself; the form's own fields stay in the form. */
function FilterChips({ filters }: { filters: Filters }) {
  const { t } = useI18n();
  const given = VALUE_FILTERS.filter((key) => filters[key] !== undefined);
  if (given.length === 0) return null;
  return (
    <div class="filter-chips" role="group" aria-label={t('visits.chips')}>
      <span class="muted">{t('visits.filtered_by')}</span>
      <ul>
        {given.map((key) => {
          const name = `${t(VALUE_FILTER_LABELS[key])}: ${filters[key]!}`;
          return (
            <li key={key} class="chip">
              <span>
                {t(VALUE_FILTER_LABELS[key])}: <strong>{filters[key]}</strong>
              </span>
              <a class="chip-remove" href={visitsUrl({ ...filters, [key]: undefined })} aria-label={t('visits.filter_remove', { name })}>
                ×
              </a>
            </li>
          );
        })}
      </ul>
    </div>
  );
}

function VisitTable({ visits, fresh, filters }: { visits: VisitRow[]; fresh: Set<string>; filters: Filters }) {
  const { t, locale } = useI18n();
  return (
    <div class="table-wrap">
      <table class="visits-table">
        <caption class="visually-hidden">{t('visits.table')}</caption>
        <thead>
          <tr>
            <th scope="col">{t('visits.col.time')}</th>
            <th scope="col">{t('visits.col.where')}</th>
            <th scope="col">{t('visits.col.kind')}</th>
            <th scope="col">{t('visits.col.bot')}</th>
            <th scope="col">{t('visits.col.location')}</th>
            <th scope="col">{t('visits.col.client')}</th>
            <th scope="col">{t('visits.col.referrer')}</th>
            <th scope="col">{t('visits.col.ip')}</th>
            <th scope="col">{t('visits.col.user_agent')}</th>
          </tr>
        </thead>
        <tbody>
          {visits.map((visit, index) => {
            const isFresh = visit.visit_id !== undefined && fresh.has(visit.visit_id);
            const place = [visit.region, visit.city].filter(Boolean).join(' · ');
            const client = Boolean(visit.browser || visit.os || visit.device_type);
            return (
              <tr key={visit.visit_id ?? `${visit.ts}-${index}`} class={isFresh ? 'visit-fresh' : undefined} data-visit-id={visit.visit_id}>
                <td class="time-cell">
                  {formatDateTime(locale, visit.ts, true)}
                  {isFresh ? <span class="fresh-badge">{t('visits.new_badge')}</span> : null}
                </td>
                <td class="wrap">
                  <span class="cell-line">{visit.subdomain ?? '—'}</span>
                  {visit.slug ? (
                    visit.link_id ? (
                      <a class="cell-line" href={`/links/${encodeURIComponent(visit.link_id)}`}>
                        /{visit.slug}
                      </a>
                    ) : (
                      <code class="cell-line">{visit.slug}</code>
                    )
                  ) : null}
                </td>
                <td>
                  <span class={`kind kind-${visit.kind}`}>{t(`visits.kind.${visit.kind}` as UiKey)}</span>
                  {visit.kind === 'attack' ? <span class="cell-line muted">{attackTypeLabel(t, visit.attack_type)}</span> : null}
                </td>
                <td>
                  {visit.is_bot === undefined
                    ? '—'
                    : visit.is_bot
                      ? visit.bot_name
                        ? t('visits.bot_named', { name: visit.bot_name })
                        : t('visits.bot_yes')
                      : t('visits.bot_no')}
                </td>
                <td>
                  {visit.country || place ? (
                    <>
                      {visit.country ? <FilterValue filters={filters} name="country" value={visit.country} /> : null}
                      {place ? <span class="cell-line">{place}</span> : null}
                    </>
                  ) : (
                    '—'
                  )}
                </td>
                <td>
                  {client ? (
                    <>
                      {visit.browser ? (
                        <FilterValue filters={filters} name="browser" value={visit.browser}>
                          {[visit.browser, visit.browser_version].filter(Boolean).join(' ')}
                        </FilterValue>
                      ) : null}
                      {visit.os ? (
                        <FilterValue filters={filters} name="os" value={visit.os}>
                          {[visit.os, visit.os_version].filter(Boolean).join(' ')}
                        </FilterValue>
                      ) : null}
                      {visit.device_type ? <FilterValue filters={filters} name="device" value={visit.device_type} /> : null}
                    </>
                  ) : (
                    '—'
                  )}
                </td>
                <td class="wrap referrer">
                  {visit.referrer ? <span class="cell-line">{visit.referrer}</span> : <span class="muted">{t('visits.none')}</span>}
                  {visit.referrer_host ? <FilterValue filters={filters} name="referrer_host" value={visit.referrer_host} /> : null}
                  {visit.utm_source ? (
                    <FilterValue filters={filters} name="utm_source" value={visit.utm_source}>{`utm_source: ${visit.utm_source}`}</FilterValue>
                  ) : null}
                  {visit.utm_campaign ? (
                    <FilterValue filters={filters} name="utm_campaign" value={visit.utm_campaign}>{`utm_campaign: ${visit.utm_campaign}`}</FilterValue>
                  ) : null}
                </td>
                <td>
                  <Addresses visit={visit} />
                </td>
                <td class="wrap">
                  <UserAgent value={visit.user_agent} />
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

export function VisitsPage() {
  const { t, locale } = useI18n();
  const { query, key, route } = useQueryKey();
  const filters = useMemo(() => filtersOf(query), [key]);
  const { limit, ...listFilters } = filters;
  const pages = useCursorPages([key]);
  const { cursor } = pages;
  const asked = `${key}|${cursor ?? ''}`;
  // A page keeps showing while the next loads: `asked` tells whether the rows are the ones asked for now.
  const loaded = useLoad(async (signal) => ({ ...(await listVisits({ ...listFilters, limit, cursor }, signal)), asked }), [key, cursor]);

  /** Visits the live poll found, newest first (reset with each load), and the ones still highlighted. */
  const [arrived, setArrived] = useState<VisitRow[]>([]);
  const [fresh, setFresh] = useState<Set<string>>(new Set());
  const [announcement, setAnnouncement] = useState('');
  const [paused, setPaused] = useState(false);
  const [liveError, setLiveError] = useState<string>();
  useEffect(() => {
    setArrived([]);
    setFresh(new Set());
    setAnnouncement('');
  }, [loaded.state === 'ready' ? loaded.data : loaded.state]);

  const shown = useMemo(() => (loaded.state === 'ready' ? [...arrived, ...loaded.data.visits] : []), [arrived, loaded]);
  const shownRef = useRef(shown);
  shownRef.current = shown;
  const loadedRef = useRef(loaded.state === 'ready' ? loaded.data : undefined);
  loadedRef.current = loaded.state === 'ready' ? loaded.data : undefined;

  // Live on the first page of an open-ended list of the owner's own visits (public lists carry no visit ids).
  const liveable =
    loaded.state === 'ready' &&
    loaded.data.asked === asked &&
    cursor === undefined &&
    !filters.until &&
    loaded.data.visits.every((visit) => visit.visit_id !== undefined);
  const live = liveable && !paused;
  useEffect(() => {
    if (!live) return;
    let stopped = false;
    let running = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const controller = new AbortController();
    const round = async () => {
      // A hidden tab ends the loop here; becoming visible starts it again.
      if (stopped || running || document.visibilityState !== 'visible') return;
      running = true;
      try {
        const rows = shownRef.current;
        const newest = rows.reduce((max, visit) => Math.max(max, Date.parse(visit.ts)), -Infinity);
        const floor = filters.since ? Date.parse(filters.since) : -Infinity;
        const since = Number.isFinite(newest) ? new Date(Math.max(newest - LOOKBACK_MS, floor)).toISOString() : filters.since;
        const known = new Set(rows.map((visit) => visit.visit_id!));
        // With later pages, the look-back also reaches visits that belong on them (older than the
        // oldest shown): those are not new.
        const oldest = rows.reduce((min, visit) => Math.min(min, Date.parse(visit.ts)), Infinity);
        const hasLater = Boolean(loadedRef.current?.meta.next_cursor);
        const found = (await newVisits(listFilters, since, known, controller.signal)).filter((visit) => !hasLater || Date.parse(visit.ts) > oldest);
        if (stopped) return;
        setLiveError(undefined);
        if (found.length > 0) {
          const ids = found.map((visit) => visit.visit_id!);
          setArrived((previous) => [...found, ...previous].sort(byTimeDescending));
          setFresh((previous) => new Set([...previous, ...ids]));
          setAnnouncement(found.length === 1 ? t('visits.live.new_one') : t('visits.live.new_many', { count: formatNumber(locale, found.length) }));
          setTimeout(() => {
            setFresh((previous) => new Set([...previous].filter((id) => !ids.includes(id))));
          }, HIGHLIGHT_MS);
        }
      } catch (error) {
        if (!stopped && !(error instanceof DOMException && error.name === 'AbortError')) setLiveError(error instanceof Error ? error.message : String(error));
      } finally {
        running = false;
        if (!stopped) timer = setTimeout(() => void round(), POLL_MS);
      }
    };
    // Hidden tabs do not poll; coming back asks at once.
    const onVisibility = () => {
      if (document.visibilityState !== 'visible') return;
      clearTimeout(timer);
      void round();
    };
    timer = setTimeout(() => void round(), POLL_MS);
    document.addEventListener('visibilitychange', onVisibility);
    return () => {
      stopped = true;
      clearTimeout(timer);
      controller.abort();
      document.removeEventListener('visibilitychange', onVisibility);
    };
  }, [live, key, loaded.state === 'ready' ? loaded.data : null]);

  const apply = (next: Filters) => route(visitsUrl(next));
  const error = loaded.state === 'error' ? loaded.error : undefined;
  const validation = error instanceof ApiError && error.code === 'validation_error';
  const filtered = Object.values(listFilters).some((value) => value !== undefined);

  return (
    <>
      <PageHeader title={t('visits.title')}>
        {liveable ? (
          <button type="button" aria-pressed={paused} onClick={() => setPaused((value) => !value)}>
            {paused ? t('visits.live.resume') : t('visits.live.pause')}
          </button>
        ) : null}
      </PageHeader>
      <FilterForm filters={filters} error={error} onApply={apply} />
      <FilterChips filters={filters} />
      <p class="live-state muted">{liveable ? (paused ? t('visits.live.paused') : t('visits.live.on')) : t('visits.live.off_page')}</p>
      <p class="live-announcement" role="status" aria-live="polite">
        {announcement}
      </p>
      {liveError ? <p class="notice notice-error">{t('visits.live.failed', { message: liveError })}</p> : null}
      {loaded.state === 'loading' ? <Loading /> : null}
      {loaded.state === 'error' ? validation ? <ErrorState error={loaded.error} /> : <ErrorState error={loaded.error} retry={loaded.reload} /> : null}
      {loaded.state === 'ready' ? (
        <>
          {loaded.data.asked !== asked ? <Loading /> : null}
          {shown.length === 0 ? (
            <Empty>
              <p>{filtered ? t('visits.empty_filtered') : t('visits.empty')}</p>
            </Empty>
          ) : (
            <VisitTable visits={shown} fresh={fresh} filters={filters} />
          )}
          {shown.length > 0 || pages.hasPrevious ? (
            <MetaPager
              pages={pages}
              meta={loaded.data.meta}
              total={loaded.data.meta.total === undefined ? undefined : loaded.data.meta.total + arrived.length}
            />
          ) : null}
        </>
      ) : null}
    </>
  );
}
