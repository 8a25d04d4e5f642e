// Statistics of the whole account (/stats), a subdomain or a link (/stats/{scope}/{id}): a time
// series chart, totals of humans, bots and attacks side by side, and the top values of each
// breakdown (GET /api/v1/stats/{scope}/{id}). Period, granularity and time zone live in the URL's
// query, so a reload or a shared address shows the same report.
import { useLocation, useRoute } from 'preact-iso';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { DIMENSIONS, type Dimension } from '#shared/analytics/rollups.js';
import { isTimeZone } from '#shared/time.js';
import { api, ApiError, load, reachableSubdomains, type Schemas } from '../api/client.js';
import { formatNumber, reportZone, viewerTimeZone } from '../app/format.js';
import { currentZoneName } from '../app/time-zones.js';
import { TimeZonePicker } from './stats-zone.js';
import { useI18n, type Translate, type UiKey } from '../app/i18n.js';
import { Async, BarTable, Empty, ErrorState, Field, Loading, Notice, PageHeader, useLoad } from '../app/ui.js';
import { periodFormat, SeriesChart } from './stats-chart.js';
import { WorldMap } from './stats-map.js';
import './stats.css';

type Report = Schemas['StatsReport'];
type TopItem = Schemas['StatsTopItem'];
type RouteItem = Schemas['StatsRouteItem'];
type Link = Schemas['Link'];
type Scope = 'user' | 'subdomain' | 'link';
type Granularity = 'hour' | 'day';

const SCOPES: readonly Scope[] = ['user', 'subdomain', 'link'];
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const PRESETS = { '24h': DAY, '7d': 7 * DAY, '30d': 30 * DAY, '90d': 90 * DAY } as const;
type Preset = keyof typeof PRESETS;
const PRESET_KEYS = Object.keys(PRESETS) as Preset[];
/**
 * The API answers 422 beyond 2 000 points per series; rounding the bounds to quarter hours adds
 * one, so hourly figures are offered for at most 83 days (1 992 hours).
 */
const MAX_HOURLY_DAYS = 83;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}$/;

/**
 * The filters a report can take from the page (the API's names), in the order chips show them. A
 * breakdown row filters by its value; `link_id` comes with an address (a links table's row).
 */
const FILTER_KEYS = ['country', 'browser', 'os', 'device', 'referrer_host', 'utm_source', 'link_id'] as const;
type FilterKey = (typeof FILTER_KEYS)[number];
type Filters = Partial<Record<FilterKey, string>>;
/** The breakdown each filter comes from. */
const FILTER_OF: Partial<Record<Dimension, FilterKey>> = {
  country: 'country',
  browser: 'browser',
  os: 'os',
  device_type: 'device',
  referrer_host: 'referrer_host',
  utm_source: 'utm_source',
};
const DIM_OF: Record<FilterKey, Dimension> = {
  country: 'country',
  browser: 'browser',
  os: 'os',
  device: 'device_type',
  referrer_host: 'referrer_host',
  utm_source: 'utm_source',
  link_id: 'link',
};

/** The report a URL asks for: a preset period, or whole days from `since` to `until` in `tz`, and its filters. */
interface ReportQuery {
  preset: Preset | null;
  since: string;
  until: string;
  granularity: Granularity;
  tz: string;
  filters: Filters;
}

/** The URL's query as a report query; what is missing or malformed falls back to the defaults. */
function parseQuery(query: Record<string, string>): ReportQuery {
  const custom = ISO_DATE.test(query.since ?? '') && ISO_DATE.test(query.until ?? '');
  const preset = custom ? null : PRESET_KEYS.includes(query.range as Preset) ? (query.range as Preset) : '7d';
  const granularity = query.granularity === 'hour' || query.granularity === 'day' ? query.granularity : preset === '24h' ? 'hour' : 'day';
  // An old name in a saved address (tz=Asia/Calcutta) opens the zone by its current one.
  const tz = query.tz && isTimeZone(query.tz) ? currentZoneName(query.tz) : viewerTimeZone();
  // A filter's value may be empty (referrer_host= is direct traffic): present is what counts.
  const filters: Filters = {};
  for (const key of FILTER_KEYS) if (typeof query[key] === 'string' && query[key].length <= 200) filters[key] = query[key];
  return { preset, since: custom ? query.since! : '', until: custom ? query.until! : '', granularity, tz, filters };
}

function toSearch(query: ReportQuery): string {
  const search = new URLSearchParams();
  if (query.preset) search.set('range', query.preset);
  else {
    search.set('since', query.since);
    search.set('until', query.until);
  }
  search.set('granularity', query.granularity);
  search.set('tz', query.tz);
  for (const key of FILTER_KEYS) if (query.filters[key] !== undefined) search.set(key, query.filters[key]);
  return search.toString();
}

/** How far `tz` is ahead of UTC at an instant, in ms. */
function zoneOffset(instant: number, tz: string): number {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    })
      .formatToParts(new Date(instant))
      .map((part) => [part.type, Number(part.value)]),
  ) as Record<string, number>;
  const wall = Date.UTC(parts.year!, parts.month! - 1, parts.day, parts.hour, parts.minute, parts.second);
  return wall - Math.floor(instant / 1000) * 1000;
}

/** The instant a day (YYYY-MM-DD) starts in `tz`; `plusDays` moves to a later day first. */
function startOfDay(date: string, tz: string, plusDays = 0): number {
  const [year, month, day] = date.split('-').map(Number) as [number, number, number];
  const wall = Date.UTC(year, month - 1, day + plusDays);
  // Twice: the offset at the guess may differ from the offset at the answer across a DST change.
  const guess = wall - zoneOffset(wall, tz);
  return wall - zoneOffset(guess, tz);
}

/** Today as YYYY-MM-DD in `tz`. */
function today(tz: string, at = Date.now()): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date(at));
}

/** The instants a query covers: a preset ends now; whole days end at the end of `until` (or now, if sooner). */
function bounds(query: ReportQuery, now = Date.now()): { since: number; until: number } {
  if (query.preset) return { since: now - PRESETS[query.preset], until: now };
  return { since: startOfDay(query.since, query.tz), until: Math.min(now, startOfDay(query.until, query.tz, 1)) };
}

const hourlyAllowed = (query: ReportQuery) => {
  const { since, until } = bounds(query);
  return until - since <= MAX_HOURLY_DAYS * DAY;
};

/** The page's address for a report target, keeping the period, granularity and zone. */
const targetPath = (scope: Scope, id: string) => (scope === 'user' ? '/stats' : `/stats/${scope}/${encodeURIComponent(id)}`);

export function StatsPage() {
  const { params } = useRoute();
  const { t } = useI18n();
  const scope = (params.scope ?? 'user') as Scope;
  const id = params.id ?? 'me';
  if (!SCOPES.includes(scope)) {
    return (
      <>
        <PageHeader title={t('stats.title')} />
        <NotFound />
      </>
    );
  }
  return <StatsReport key={`${scope}/${id}`} scope={scope} id={id} />;
}

function NotFound() {
  const { t } = useI18n();
  return (
    <div class="state state-error" role="alert">
      <h2>{t('stats.not_found')}</h2>
      <p>{t('stats.not_found_hint')}</p>
      <a href="/stats">{t('stats.back_account')}</a>
    </div>
  );
}

/** What the target picker offers: the subdomains, and the links of the subdomain in view. */
interface Targets {
  subdomains: string[];
  /** The link in view (null once deleted: its statistics stay, its record answers 404). */
  link: Link | null;
  /** The subdomain the report is about (a link's own). */
  subdomain: string | null;
  links: Link[];
}

async function loadTargets(scope: Scope, id: string, signal: AbortSignal): Promise<Targets> {
  const [subdomains, link] = await Promise.all([
    reachableSubdomains(signal),
    scope === 'link'
      ? load(api.GET('/api/v1/links/{id}', { params: { path: { id } }, signal })).catch((error: unknown) => {
          if (error instanceof ApiError && error.status === 404) return null;
          throw error;
        })
      : Promise.resolve(null),
  ]);
  const subdomain = scope === 'subdomain' ? id : (link?.subdomain ?? null);
  const owned = subdomains.subdomains.map((row) => row.name);
  // Only an owned subdomain's links: another owner's would answer its public list (no ids).
  const listed =
    subdomain && owned.includes(subdomain) ? (await load(api.GET('/api/v1/links', { params: { query: { subdomain, limit: 200 } }, signal }))).links : [];
  const links = listed.filter((row): row is Link => 'id' in row);
  return { subdomains: owned, link, subdomain, links };
}

function StatsReport({ scope, id }: { scope: Scope; id: string }) {
  const { t, locale } = useI18n();
  const { query: rawQuery, path, route } = useLocation();
  const query = useMemo(() => parseQuery(rawQuery), [rawQuery]);
  const search = toSearch(query);
  const setQuery = (next: ReportQuery) => route(`${path}?${toSearch(next)}`);

  // An address without every setting gets them written in, so copying it shares exactly this report.
  useEffect(() => {
    const current = new URLSearchParams(rawQuery).toString();
    if (current !== search) route(`${path}?${search}`, true);
  }, [search]);

  const loaded = useLoad(
    async (signal) => {
      const { since, until } = bounds(query);
      // The API keeps the last 2 000 points of a longer series; the page says so rather than show a cut chart.
      if (query.granularity === 'hour' && !hourlyAllowed(query)) {
        throw new ApiError(422, { code: 'validation_error', message: t('stats.too_many_points'), details: { granularity: t('stats.too_many_points') } });
      }
      const report = await load(
        api.GET('/api/v1/stats/{scope}/{id}', {
          params: {
            path: { scope, id },
            query: {
              since: new Date(since).toISOString(),
              until: new Date(until).toISOString(),
              granularity: query.granularity,
              tz: reportZone(query.tz),
              limit: MAP_COUNTRIES,
              compare: 'previous',
              ...query.filters,
            },
          },
          signal,
        }),
      );
      return { search, report };
    },
    [scope, id, search],
  );
  const targets = useLoad((signal) => loadTargets(scope, id, signal), [scope, id]);

  const linkName = targets.state === 'ready' ? (targets.data.link?.slug ?? id) : id;
  const title =
    scope === 'user' ? t('stats.title_account') : scope === 'subdomain' ? t('stats.title_subdomain', { name: id }) : t('stats.title_link', { name: linkName });
  const updating = loaded.state === 'ready' && loaded.data.search !== search;
  const hourly = hourlyAllowed(query);

  return (
    <div class="stats">
      <PageHeader title={title} />
      {scope === 'link' && targets.state === 'ready' && targets.data.subdomain ? (
        <p class="stats-subtitle">
          <a href={`${targetPath('subdomain', targets.data.subdomain)}?${search}`}>{t('stats.link_on', { name: targets.data.subdomain })}</a>
        </p>
      ) : null}
      <TargetPicker scope={scope} id={id} targets={targets} search={search} />
      <Pickers query={query} hourly={hourly} onChange={setQuery} />
      <FilterChips query={query} path={path} links={targets.state === 'ready' ? targets.data.links : []} />
      <div class="stats-results" aria-busy={updating || loaded.state === 'loading'}>
        {loaded.state === 'error' ? (
          <ReportError error={loaded.error} retry={loaded.reload} onDaily={() => setQuery({ ...query, granularity: 'day' })} />
        ) : (
          <Async loaded={loaded}>
            {({ report }) => (
              <>
                <p class="stats-applied muted">
                  {t('stats.applied', {
                    since: periodFormat(locale, report.range.tz, 'hour').format(new Date(report.range.since)),
                    until: periodFormat(locale, report.range.tz, 'hour').format(new Date(report.range.until)),
                    tz: report.range.tz,
                  })}
                  {updating ? (
                    <span class="stats-updating" role="status">
                      <span class="spinner" aria-hidden="true" />
                      {t('stats.updating')}
                    </span>
                  ) : null}
                </p>
                <ReportView report={report} search={search} query={query} />
              </>
            )}
          </Async>
        )}
      </div>
    </div>
  );
}

function TargetPicker({ scope, id, targets, search }: { scope: Scope; id: string; targets: ReturnType<typeof useLoad<Targets>>; search: string }) {
  const { t } = useI18n();
  const { route } = useLocation();
  const current = targetPath(scope, id);
  const [picked, setPicked] = useState(current);
  useEffect(() => setPicked(current), [current]);
  if (targets.state === 'loading') return <Loading />;
  if (targets.state === 'error') {
    if (targets.error instanceof ApiError && targets.error.status === 403) return null;
    return <Notice kind="error">{t('stats.targets_error', { message: targets.error.message })}</Notice>;
  }
  const { subdomains, links, subdomain, link } = targets.data;
  const listed = new Set(['/stats', ...subdomains.map((name) => targetPath('subdomain', name)), ...links.map((row) => targetPath('link', row.id))]);
  return (
    <form
      class="stats-target"
      onSubmit={(event) => {
        event.preventDefault();
        route(`${picked}?${search}`);
      }}
    >
      <Field id="stats-target" label={t('stats.target')}>
        <select id="stats-target" value={picked} onChange={(event) => setPicked(event.currentTarget.value)}>
          <option value="/stats">{t('stats.target_account')}</option>
          {!listed.has(current) ? <option value={current}>{scope === 'link' ? (link?.slug ?? id) : id}</option> : null}
          {subdomains.length > 0 ? (
            <optgroup label={t('stats.target_subdomains')}>
              {subdomains.map((name) => (
                <option key={name} value={targetPath('subdomain', name)}>
                  {name}
                </option>
              ))}
            </optgroup>
          ) : null}
          {subdomain && links.length > 0 ? (
            <optgroup label={t('stats.target_links', { name: subdomain })}>
              {links.map((row) => (
                <option key={row.id} value={targetPath('link', row.id)}>
                  {`${subdomain}/${row.slug}`}
                </option>
              ))}
            </optgroup>
          ) : null}
        </select>
      </Field>
      <button type="submit">{t('stats.open')}</button>
    </form>
  );
}

function Pickers({ query, hourly, onChange }: { query: ReportQuery; hourly: boolean; onChange: (query: ReportQuery) => void }) {
  const { t } = useI18n();
  const [customOpen, setCustomOpen] = useState(query.preset === null);
  useEffect(() => {
    if (query.preset === null) setCustomOpen(true);
  }, [query.preset]);
  /** Moving to a period too long for hourly figures switches to daily ones rather than asking for a 422. */
  const withPeriod = (next: ReportQuery): ReportQuery => (next.granularity === 'hour' && !hourlyAllowed(next) ? { ...next, granularity: 'day' } : next);
  const presetLabel: Record<Preset, UiKey> = { '24h': 'stats.range_24h', '7d': 'stats.range_7d', '30d': 'stats.range_30d', '90d': 'stats.range_90d' };
  return (
    <>
      <div class="stats-pickers">
        <div class="picker">
          <span class="picker-label" id="stats-range-label">
            {t('stats.range')}
          </span>
          <div class="segmented" role="group" aria-labelledby="stats-range-label">
            {PRESET_KEYS.map((preset) => (
              <button
                key={preset}
                type="button"
                aria-pressed={!customOpen && query.preset === preset}
                onClick={() => {
                  setCustomOpen(false);
                  onChange(withPeriod({ ...query, preset, since: '', until: '' }));
                }}
              >
                {t(presetLabel[preset])}
              </button>
            ))}
            <button type="button" aria-pressed={customOpen} aria-expanded={customOpen} aria-controls="stats-custom" onClick={() => setCustomOpen(true)}>
              {t('stats.range_custom')}
            </button>
          </div>
        </div>
        <div class="picker">
          <span class="picker-label" id="stats-granularity-label">
            {t('stats.granularity')}
          </span>
          <div class="segmented" role="group" aria-labelledby="stats-granularity-label" aria-describedby={hourly ? undefined : 'stats-hourly-hint'}>
            <button type="button" aria-pressed={query.granularity === 'hour'} disabled={!hourly} onClick={() => onChange({ ...query, granularity: 'hour' })}>
              {t('stats.hourly')}
            </button>
            <button type="button" aria-pressed={query.granularity === 'day'} onClick={() => onChange({ ...query, granularity: 'day' })}>
              {t('stats.daily')}
            </button>
          </div>
          {hourly ? null : (
            <small class="hint" id="stats-hourly-hint">
              {t('stats.hourly_too_long', { days: MAX_HOURLY_DAYS })}
            </small>
          )}
        </div>
        <TimeZonePicker value={query.tz} onChange={(tz) => onChange({ ...query, tz })} />
      </div>
      {customOpen ? <CustomRange query={query} onApply={(next) => onChange(withPeriod(next))} /> : null}
    </>
  );
}

/** Whole days from one date to another (both included) in the report's zone. */
function CustomRange({ query, onApply }: { query: ReportQuery; onApply: (query: ReportQuery) => void }) {
  const { t } = useI18n();
  const initial = () => {
    if (query.preset === null) return { since: query.since, until: query.until };
    const { since, until } = bounds(query);
    return { since: today(query.tz, since), until: today(query.tz, until) };
  };
  const [dates, setDates] = useState(initial);
  const [errors, setErrors] = useState<{ since?: string; until?: string }>({});
  useEffect(() => setDates(initial()), [query.preset, query.since, query.until, query.tz]);
  const max = today(query.tz);
  const submit = (event: Event) => {
    event.preventDefault();
    const found: { since?: string; until?: string } = {};
    if (!ISO_DATE.test(dates.since)) found.since = t('stats.date_required');
    if (!ISO_DATE.test(dates.until)) found.until = t('stats.date_required');
    if (!found.since && !found.until && dates.since > dates.until) found.since = t('stats.since_after_until');
    setErrors(found);
    if (found.since || found.until) return;
    onApply({ ...query, preset: null, since: dates.since, until: dates.until });
  };
  const input = (name: 'since' | 'until') => (
    <input
      id={`stats-${name}`}
      type="date"
      value={dates[name]}
      max={max}
      aria-invalid={errors[name] ? true : undefined}
      aria-describedby={errors[name] ? `stats-${name}-error` : undefined}
      onInput={(event) => setDates({ ...dates, [name]: event.currentTarget.value })}
    />
  );
  return (
    <form id="stats-custom" class="stats-custom" onSubmit={submit} noValidate>
      <Field id="stats-since" label={t('stats.since')} error={errors.since}>
        {input('since')}
      </Field>
      <Field id="stats-until" label={t('stats.until')} error={errors.until}>
        {input('until')}
      </Field>
      <div class="form-actions">
        <button type="submit" class="button-primary">
          {t('stats.apply')}
        </button>
      </div>
    </form>
  );
}

/** A failed report: not found and refused parameters have their own wording; the rest (403 included) the shared one. */
function ReportError({ error, retry, onDaily }: { error: Error; retry: () => void; onDaily: () => void }) {
  const { t } = useI18n();
  if (error instanceof ApiError && error.status === 404) return <NotFound />;
  if (error instanceof ApiError && error.code === 'validation_error') {
    const details = Object.values(error.details).filter((value): value is string => typeof value === 'string');
    return (
      <div class="state state-error" role="alert">
        <h2>{t('stats.invalid_query')}</h2>
        <p>{error.message}</p>
        {details.length > 0 ? (
          <ul>
            {details.map((detail) => (
              <li key={detail}>{detail}</li>
            ))}
          </ul>
        ) : null}
        {'granularity' in error.details ? (
          <button type="button" onClick={onDaily}>
            {t('stats.use_daily')}
          </button>
        ) : null}
      </div>
    );
  }
  return <ErrorState error={error} retry={retry} />;
}

type TotalKey = keyof Report['totals'];

/** A total's change against the previous period: an arrow and a percentage, said in words for screen readers. */
function Change({ change, before }: { change: number | null; before: number }) {
  const { t, locale } = useI18n();
  const was = formatNumber(locale, before);
  if (change === null) return <dd class="change change-none">{t('stats.change_none', { before: was })}</dd>;
  const percent = new Intl.NumberFormat(locale, { style: 'percent', maximumFractionDigits: Math.abs(change) < 0.1 ? 1 : 0, signDisplay: 'exceptZero' }).format(
    change,
  );
  // A change that rounds to 0 % (shown with one decimal below 10 %) is no change: no arrow beside "0%".
  const shown = Math.round(change * 1000) / 1000;
  const direction = shown > 0 ? 'up' : shown < 0 ? 'down' : 'same';
  return (
    <dd class={`change change-${direction}`} title={t('stats.change_title', { before: was })}>
      <span aria-hidden="true">{direction === 'up' ? '▲ ' : direction === 'down' ? '▼ ' : ''}</span>
      {percent}
      <span class="visually-hidden"> {t('stats.change_title', { before: was })}</span>
    </dd>
  );
}

function Totals({ totals, previous, change }: { totals: Report['totals']; previous?: Report['totals']; change?: Report['change'] }) {
  const { t, locale } = useI18n();
  const items: [UiKey, TotalKey][] = [
    ['stats.humans', 'visits'],
    ['stats.unique', 'unique_visitors'],
    ['stats.bots', 'bots'],
    ['stats.attacks', 'attacks'],
  ];
  return (
    <dl class="totals" aria-label={t('stats.totals')}>
      {items.map(([label, key]) => (
        <div key={label}>
          <dt>{t(label)}</dt>
          <dd>{formatNumber(locale, totals[key])}</dd>
          {previous && change ? <Change change={change[key]} before={previous[key]} /> : null}
        </div>
      ))}
    </dl>
  );
}

function ReportView({ report, search, query }: { report: Report; search: string; query: ReportQuery }) {
  const { t, locale } = useI18n();
  const { totals, range } = report;
  if (totals.visits + totals.bots + totals.attacks === 0) {
    // The map stays, uncoloured, where the report has a countries breakdown: the page keeps its shape.
    return (
      <div class="stats-empty">
        <Empty>
          <p>{t('stats.empty')}</p>
          <p class="muted">{t('stats.empty_hint')}</p>
        </Empty>
        {report.top.country ? <CountryMap items={[]} query={query} /> : null}
      </div>
    );
  }
  const when = periodFormat(locale, range.tz, 'hour');
  const labelKey = range.granularity === 'hour' ? 'stats.chart_label_hour' : 'stats.chart_label_day';
  const dims = DIMENSIONS.filter((dim) => report.top[dim] !== undefined);
  const countries = report.top.country;
  return (
    <>
      <section class="card" aria-labelledby="stats-chart-heading">
        <h2 id="stats-chart-heading">{t('stats.chart')}</h2>
        <Totals totals={totals} previous={report.previous?.totals} change={report.change} />
        <SeriesChart
          series={report.series}
          previous={report.previous?.series}
          tz={range.tz}
          granularity={range.granularity}
          label={t(labelKey, { since: when.format(new Date(range.since)), until: when.format(new Date(range.until)), tz: range.tz })}
        />
      </section>
      {countries ? <CountryMap items={countries} query={query} /> : null}
      <section class="stats-breakdowns" aria-labelledby="stats-breakdowns-heading">
        <h2 id="stats-breakdowns-heading">{t('stats.breakdowns')}</h2>
        <div class="grid-2">
          {dims.map((dim) => (
            <div key={dim} class="card">
              {dim === 'link' ? (
                <LinkTable items={report.top.link!.slice(0, TABLE_ROWS)} search={search} />
              ) : (
                <Breakdown dim={dim} items={report.top[dim]!.slice(0, TABLE_ROWS)} query={query} />
              )}
            </div>
          ))}
        </div>
      </section>
      {report.routes && [...report.routes.rules, ...report.routes.variants].some((item) => item.index >= 0) ? <RoutesView routes={report.routes} /> : null}
    </>
  );
}

/** A rule's condition in a few words: its type and what it asks (`device: mobile, tablet`, `time: 22:00–06:00`). */
function conditionText(condition: NonNullable<RouteItem['condition']>): string {
  switch (condition.type) {
    case 'time':
      return `time: ${condition.from}–${condition.to}${condition.days ? ` (${condition.days.join(', ')})` : ''}`;
    case 'query':
      return `query: ${condition.name}${condition.value === undefined ? '' : `=${condition.value}`}`;
    default:
      return `${condition.type}: ${condition.values.join(', ')}`;
  }
}

/**
 * A link's visits by redirect rule and by A/B variant (issue 40): visits, unique visitors and share,
 * each rule or variant named by its number and what it is now (its condition or weight, its target).
 */
function RoutesView({ routes }: { routes: NonNullable<Report['routes']> }) {
  const { t, locale } = useI18n();
  const table = (caption: string, column: string, items: RouteItem[], label: (item: RouteItem) => string) => {
    const total = items.reduce((sum, item) => sum + item.visits, 0);
    return (
      <div class="card">
        <table class="bars routes-table">
          <caption>{caption}</caption>
          <thead>
            <tr>
              <th scope="col">{column}</th>
              <th scope="col" class="num">
                {t('stats.visits')}
              </th>
              <th scope="col" class="num">
                {t('stats.unique_visitors')}
              </th>
              <th scope="col" class="num">
                {t('stats.share')}
              </th>
            </tr>
          </thead>
          <tbody>
            {items.map((item) => (
              <tr key={item.index}>
                <td>
                  <span class="bar" style={{ width: `${Math.max(1, total ? (item.visits / total) * 100 : 0)}%` }} aria-hidden="true" />
                  <span class="bar-label">{label(item)}</span>
                </td>
                <td class="num">{formatNumber(locale, item.visits)}</td>
                <td class="num">{formatNumber(locale, item.unique_visitors)}</td>
                <td class="num">{total ? `${formatNumber(locale, Math.round((item.visits / total) * 1000) / 10)} %` : '–'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    );
  };
  const ruleLabel = (item: RouteItem) => {
    if (item.index < 0) return t('stats.rule_none');
    const name = t('stats.rule_n', { n: item.index + 1 });
    return item.condition ? `${name} · ${conditionText(item.condition)} → ${item.target_url ?? ''}` : `${name} (${t('stats.route_removed')})`;
  };
  const variantLabel = (item: RouteItem) => {
    if (item.index < 0) return t('stats.variant_none');
    const name = t('stats.variant_n', { n: String.fromCharCode(65 + item.index) });
    return item.target_url ? `${name} · ${t('stats.weight', { weight: item.weight ?? 0 })} → ${item.target_url}` : `${name} (${t('stats.route_removed')})`;
  };
  return (
    <section class="stats-breakdowns" aria-labelledby="stats-routes-heading">
      <h2 id="stats-routes-heading">{t('stats.routes')}</h2>
      <p class="muted">{t('stats.routes_raw')}</p>
      {/* One table a row: a rule or a variant is named by its condition and target, longer than a breakdown's value. */}
      <div class="routes-tables">
        {routes.rules.some((item) => item.index >= 0) ? table(t('stats.routes_rules'), t('stats.col_rule'), routes.rules, ruleLabel) : null}
        {routes.variants.some((item) => item.index >= 0) ? table(t('stats.routes_variants'), t('stats.col_variant'), routes.variants, variantLabel) : null}
      </div>
    </section>
  );
}

/**
 * Rows each breakdown table shows. The report is asked for MAP_COUNTRIES rows a breakdown, so that the
 * map colours every country with visits (the API's most), and the tables show the first ones.
 */
const TABLE_ROWS = 10;
const MAP_COUNTRIES = 100;

/** The world map of the report's countries, each a link to the report filtered by it (as its table row). */
function CountryMap({ items, query }: { items: TopItem[]; query: ReportQuery }) {
  const { path } = useLocation();
  const { t, locale } = useI18n();
  const regions = useRegionNames(locale);
  const filtered = query.filters.country !== undefined;
  return (
    <section class="card" aria-labelledby="stats-map-heading">
      <h2 id="stats-map-heading">{t('stats.map')}</h2>
      <WorldMap
        items={items}
        countryName={(code) => (regions ? (regions.of(code) ?? code) : code)}
        hrefOf={(code) => (filtered ? undefined : `${path}?${toSearch({ ...query, filters: { ...query.filters, country: code } })}`)}
      />
    </section>
  );
}

const dimCaption = (dim: Dimension): UiKey => `stats.dim_${dim}`;
const dimColumn = (dim: Dimension): UiKey => `stats.col_${dim}`;

/** A breakdown value as people read it: countries by name, device types and empty values in words. */
function valueLabel(t: Translate, regions: Intl.DisplayNames | null, dim: Dimension, item: TopItem): string {
  const region = (code: string) => (code && regions ? (regions.of(code) ?? code) : code);
  if (dim === 'referrer_host' && !item.value) return t('stats.direct');
  if (dim === 'utm_source' && !item.value) return t('stats.none');
  if (!item.value) return t('stats.unknown');
  if (dim === 'country') return region(item.value);
  if (dim === 'city') return item.country ? `${item.value}, ${region(item.country)}` : item.value;
  if (dim === 'device_type' && ['desktop', 'mobile', 'tablet'].includes(item.value)) return t(`stats.device_${item.value}` as UiKey);
  return item.value;
}

/** Country names in the viewer's language (null where the browser has none: codes are shown then). */
function useRegionNames(locale: string): Intl.DisplayNames | null {
  return useMemo(() => {
    try {
      return new Intl.DisplayNames(locale, { type: 'region' });
    } catch {
      return null;
    }
  }, [locale]);
}

/** The filters in force as chips: each removes itself (a link to the report without it), and one clears them all. */
function FilterChips({ query, path, links }: { query: ReportQuery; path: string; links: Link[] }) {
  const { t, locale } = useI18n();
  const regions = useRegionNames(locale);
  const given = FILTER_KEYS.filter((key) => query.filters[key] !== undefined);
  if (given.length === 0) return null;
  const without = (key: FilterKey) => {
    const filters = { ...query.filters };
    delete filters[key];
    return `${path}?${toSearch({ ...query, filters })}`;
  };
  const label = (key: FilterKey) => {
    const value = query.filters[key]!;
    if (key === 'link_id') return links.find((link) => link.id === value)?.slug ?? value;
    return valueLabel(t, regions, DIM_OF[key], { value, visits: 0 });
  };
  return (
    <div class="filter-chips" role="group" aria-label={t('stats.filters')}>
      <span class="muted">{t('stats.filtered_by')}</span>
      <ul>
        {given.map((key) => (
          <li key={key} class="chip">
            <span>
              {t(dimColumn(DIM_OF[key]))}: <strong>{label(key)}</strong>
            </span>
            <a href={without(key)} class="chip-remove" aria-label={t('stats.filter_remove', { name: `${t(dimColumn(DIM_OF[key]))}: ${label(key)}` })}>
              ×
            </a>
          </li>
        ))}
      </ul>
      {given.length > 1 ? <a href={`${path}?${toSearch({ ...query, filters: {} })}`}>{t('stats.filter_clear')}</a> : null}
      <p class="muted filter-note">{t('stats.filter_note')}</p>
    </div>
  );
}

function Breakdown({ dim, items, query }: { dim: Exclude<Dimension, 'link'>; items: TopItem[]; query: ReportQuery }) {
  const { path } = useLocation();
  const { t, locale } = useI18n();
  const regions = useRegionNames(locale);
  const filter = FILTER_OF[dim];
  const rows = items.map((item) => {
    const name = valueLabel(t, regions, dim, item);
    // A row filters the report by its value, unless that filter is on already (its only row, then).
    const href =
      filter && query.filters[filter] === undefined ? `${path}?${toSearch({ ...query, filters: { ...query.filters, [filter]: item.value } })}` : undefined;
    return { name, value: item.visits, href, hint: href ? t('stats.filter_by', { name }) : undefined };
  });
  return <BarTable caption={t(dimCaption(dim))} nameLabel={t(dimColumn(dim))} valueLabel={t('stats.visits')} rows={rows} />;
}

/** The links breakdown: BarTable's look, each slug opening that link's report. */
function LinkTable({ items, search }: { items: TopItem[]; search: string }) {
  const { t, locale } = useI18n();
  const max = Math.max(1, ...items.map((item) => item.visits));
  return (
    <table class="bars">
      <caption>{t('stats.dim_link')}</caption>
      <thead>
        <tr>
          <th scope="col">{t('stats.col_link')}</th>
          <th scope="col" class="num">
            {t('stats.visits')}
          </th>
        </tr>
      </thead>
      <tbody>
        {items.length === 0 ? (
          <tr>
            <td colSpan={2} class="muted">
              {t('state.empty')}
            </td>
          </tr>
        ) : (
          items.map((item) => (
            <tr key={item.value}>
              <td>
                <span class="bar" style={{ width: `${Math.max(1, (item.visits / max) * 100)}%` }} aria-hidden="true" />
                <span class="bar-label">
                  {item.link_id ? <a href={`${targetPath('link', item.link_id)}?${search}`}>{item.slug ?? t('stats.deleted_link')}</a> : t('stats.no_link')}
                </span>
              </td>
              <td class="num">{formatNumber(locale, item.visits)}</td>
            </tr>
          ))
        )}
      </tbody>
    </table>
  );
}
