// The public page of a subdomain as HTML, rendered on the server with Preact (text and attributes
// escaped by the renderer: a title typed as `<img onerror=…>` is text). No script at all: the
// chart is inline SVG, the one stylesheet is inline and admitted by its hash in the page's CSP,
// and the page makes no request of its own — so nothing the policy hides can travel anywhere.
import { createHash } from 'node:crypto';
import type { ComponentChildren, JSX } from 'preact';
import { renderToString } from 'preact-render-to-string';
import type { Dimension } from '#shared/analytics/rollups.js';
import { t as translate, type Locale } from '#shared/i18n/index.js';
import type { UiKey } from '#shared/i18n/ui/index.js';

/** The page payload of GET /api/v1/subdomains/{name}. */
export interface PublicPagePayload {
  name: string;
  title: string | null;
  url: string;
  public: { stats: boolean; visits_list: boolean; links: boolean; owner: boolean; publish_delay_sec: number; max_items: number };
  links?: { slug: string; short_url: string; title: string | null; created_at: string }[];
  owner?: { display_name: string | null };
}

/** The report of GET /api/v1/stats?subdomain= (what the page uses of it). */
export interface PublicReport {
  range: { since: string; until: string };
  totals: { visits: number; unique_visitors: number; bots: number; attacks: number };
  series: { t: string; visits: number }[];
  top: Partial<Record<Dimension, { value: string; visits: number; country?: string; slug?: string | null }[]>>;
  /** The link the report is narrowed to (`?link=`), when the policy let that filter apply. */
  filters?: { link?: string };
}

export interface PublicPageData {
  page: PublicPagePayload;
  /** The period shown (PUBLIC_PERIODS), from `?period=`. */
  period: PublicPeriod;
  /** The page's `?lang=`, kept in the period links. */
  lang?: string;
  /** Present when the policy makes statistics public. */
  report?: PublicReport;
  /** Present when the policy makes the visit list public: public visit rows (only the columns the policy opens). */
  visits?: Record<string, unknown>[];
}

/**
 * The periods a reader can pick (`?period=`, links: the page has no script), each with the
 * granularity of its chart; 30 days unless another is asked for.
 */
export const PUBLIC_PERIODS = {
  '24h': { ms: 86_400_000, granularity: 'hour' },
  '7d': { ms: 7 * 86_400_000, granularity: 'day' },
  '30d': { ms: 30 * 86_400_000, granularity: 'day' },
  '90d': { ms: 90 * 86_400_000, granularity: 'day' },
} as const;
export type PublicPeriod = keyof typeof PUBLIC_PERIODS;
export const DEFAULT_PUBLIC_PERIOD: PublicPeriod = '30d';
/** A `?period=` value as a period: anything else is the default (the page names the one shown). */
export const publicPeriodOf = (value: unknown): PublicPeriod =>
  typeof value === 'string' && Object.hasOwn(PUBLIC_PERIODS, value) ? (value as PublicPeriod) : DEFAULT_PUBLIC_PERIOD;

const CSS = `
:root{color-scheme:light dark;--bg:#f6f7f9;--surface:#fff;--text:#1b1f24;--muted:#57606a;--border:#d0d7de;--accent:#0b5cad;--bar:#6d9fd6}
@media (prefers-color-scheme:dark){:root{--bg:#0f1419;--surface:#171d24;--text:#e6edf3;--muted:#9ba7b4;--border:#303a46;--accent:#6cb2ff;--bar:#3f7fc4}}
*{box-sizing:border-box}body{margin:0;font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;line-height:1.45;background:var(--bg);color:var(--text)}
a{color:var(--accent)}main{max-width:60rem;margin:0 auto;padding:1.25rem 1rem 3rem}
header.site{margin:1rem 0 1.5rem}h1{margin:0;font-size:1.8rem;word-break:break-word}h2{font-size:1.2rem;margin:0 0 .75rem}
.muted{color:var(--muted)}section{background:var(--surface);border:1px solid var(--border);border-radius:8px;padding:1rem;margin-bottom:1rem;min-width:0}
.totals{display:grid;grid-template-columns:repeat(auto-fit,minmax(120px,1fr));gap:.5rem;margin:0 0 1rem}.totals dt{color:var(--muted);font-size:.85rem}
.totals dd{margin:0;font-size:1.5rem;font-weight:700;font-variant-numeric:tabular-nums}
.chart{width:100%;height:auto;display:block;color:var(--bar)}.chart rect{fill:currentColor}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(260px,1fr));gap:1rem}
.wrap{overflow-x:auto}table{border-collapse:collapse;width:100%}caption{text-align:left;font-weight:600;padding:.25rem 0 .5rem}
th,td{text-align:left;padding:.4rem .5rem;border-bottom:1px solid var(--border);vertical-align:top}th{font-size:.85rem;color:var(--muted)}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}td.name{word-break:break-word}
.bar{display:block;width:100%;height:.35rem;margin-top:.2rem;color:var(--bar)}.bar rect{fill:currentColor}
ul.links{list-style:none;margin:0;padding:0}ul.links li{padding:.5rem 0;border-bottom:1px solid var(--border);word-break:break-word}ul.links li:last-child{border-bottom:0}
figure{margin:0}.chart line{stroke:var(--border);stroke-width:1}table.visits td,table.visits th{white-space:nowrap}
details{margin-top:.75rem}summary{cursor:pointer}footer{margin-top:2rem;color:var(--muted);font-size:.9rem}
:focus-visible{outline:3px solid #f59e0b;outline-offset:2px}
nav.periods ul{display:flex;flex-wrap:wrap;gap:.5rem;list-style:none;margin:0 0 1rem;padding:0}
nav.periods a{display:inline-block;padding:.3rem .75rem;border:1px solid var(--border);border-radius:999px;text-decoration:none}
nav.periods a[aria-current=page]{background:var(--accent);border-color:var(--accent);color:var(--surface);font-weight:600}
.chart text{fill:var(--muted);font-size:11px;font-family:inherit}.chart .axis{stroke:var(--muted)}figcaption{font-size:.9rem;margin-bottom:.5rem}
`.trim();

/** SHA-256 of the inline stylesheet, as the CSP's style-src names it. */
export const PUBLIC_PAGE_STYLE_HASH = createHash('sha256').update(CSS).digest('base64');

/** The report's totals in the order shown, each with its label. */
const TOTALS: [keyof PublicReport['totals'], UiKey][] = [
  ['visits', 'public.visits'],
  ['unique_visitors', 'public.unique'],
  ['bots', 'public.bots'],
  ['attacks', 'public.attacks'],
];

type T = (key: UiKey, params?: Record<string, string | number>) => string;

/**
 * The breakdowns in the order the page shows them, the links first (what a reader of a subdomain's
 * page comes for), then where visitors are and come from, then their software. The reports' own
 * order is DIMENSIONS (shared/analytics/rollups.ts): this is the same dimensions, each once,
 * rearranged (render.test.ts holds it to that).
 */
export const PUBLIC_DIMENSION_ORDER = [
  'link',
  'country',
  'city',
  'referrer_host',
  'utm_source',
  'browser',
  'os',
  'device_type',
] as const satisfies readonly Dimension[];

/** Public visit columns shown as table columns, in order (others, such as coordinates or the raw user agent, are left out). */
const VISIT_COLUMNS = ['ts', 'kind', 'slug', 'ip_public', 'ip_lan', 'country', 'region', 'city', 'browser', 'os', 'device_type', 'referrer_host'] as const;

/** The catalogue's messages of one locale (the page's keys are the user interface's). */
const translatorOf =
  (locale: Locale): T =>
  (key, params) =>
    translate(locale, key, params);

/** A whole page as the answer's body. */
const html = (body: JSX.Element) => `<!doctype html>${renderToString(body)}`;

/** What every page ends with: its own notes, then where it comes from. */
function Footer({ t, product, children }: { t: T; product: { name: string; url: string }; children?: ComponentChildren }) {
  return (
    <footer>
      {children}
      <p>
        {t('public.powered')} <a href={product.url}>{product.name}</a>
      </p>
    </footer>
  );
}

function Document({ locale, title, children }: { locale: Locale; title: string; children: ComponentChildren }) {
  return (
    <html lang={locale}>
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="strict-origin-when-cross-origin" />
        {/* No favicon request: the page makes no request at all. */}
        <link rel="icon" href="data:," />
        <title>{title}</title>
        {/* Our own constant, admitted by its hash: text escaping would change it. */}
        <style dangerouslySetInnerHTML={{ __html: CSS }} />
      </head>
      <body>{children}</body>
    </html>
  );
}

const numberOf = (locale: Locale) => new Intl.NumberFormat(locale);
const dayOf = (locale: Locale) => new Intl.DateTimeFormat(locale, { dateStyle: 'medium', timeZone: 'UTC' });
const timeOf = (locale: Locale) => new Intl.DateTimeFormat(locale, { dateStyle: 'short', timeStyle: 'medium', timeZone: 'UTC' });
const hourOf = (locale: Locale) => new Intl.DateTimeFormat(locale, { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' });
const shortDayOf = (locale: Locale) => new Intl.DateTimeFormat(locale, { month: 'short', day: 'numeric', timeZone: 'UTC' });
const shortHourOf = (locale: Locale) => new Intl.DateTimeFormat(locale, { hour: 'numeric', minute: '2-digit', timeZone: 'UTC' });

function delayText(t: T, seconds: number): string {
  if (seconds >= 86_400 && seconds % 86_400 === 0) return t('public.delay.days', { count: seconds / 86_400 });
  if (seconds >= 3_600) return t('public.delay.hours', { count: Math.round((seconds / 3_600) * 10) / 10 });
  return t('public.delay.minutes', { count: Math.max(1, Math.round(seconds / 60)) });
}

/**
 * Visits per period as SVG bars, labelled: a caption says what is counted and over what, the y axis
 * its scale (0, half and the highest value), the x axis the first, middle and last period; each
 * bar's period and count is its tooltip, and the table below has them all.
 */
function Chart({
  series,
  locale,
  t,
  granularity,
  range,
}: {
  series: PublicReport['series'];
  locale: Locale;
  t: T;
  granularity: 'hour' | 'day';
  range: PublicReport['range'];
}) {
  const width = 600;
  const height = 160;
  const left = 44;
  const bottom = 20;
  const top = 8;
  const plot = { width: width - left - 4, height: height - bottom - top };
  const max = Math.max(1, ...series.map((point) => point.visits));
  const slot = plot.width / Math.max(1, series.length);
  const period = granularity === 'hour' ? hourOf(locale) : dayOf(locale);
  const numbers = numberOf(locale);
  const y = (value: number) => top + plot.height - (value / max) * plot.height;
  const ticks = max >= 2 ? [0, Math.round(max / 2), max] : [0, max];
  const labelled = [...new Set([0, Math.floor((series.length - 1) / 2), series.length - 1])].filter((index) => index >= 0 && index < series.length);
  // The owner's stats_max_items keeps only the newest points: the caption then says from when the bars run, and why.
  const cut = series.length > 0 && Date.parse(series[0]!.t) > Date.parse(range.since);
  const caption =
    t(granularity === 'hour' ? 'public.chart_caption_hour' : 'public.chart_caption_day', {
      since: timeOf(locale).format(new Date(cut ? series[0]!.t : range.since)),
      until: timeOf(locale).format(new Date(range.until)),
      max: numbers.format(max),
    }) + (cut ? ` ${t(granularity === 'hour' ? 'public.chart_cut_hour' : 'public.chart_cut_day', { count: numbers.format(series.length) })}` : '');
  return (
    <figure>
      <figcaption class="muted">{caption}</figcaption>
      <svg class="chart" viewBox={`0 0 ${width} ${height}`} role="img" aria-label={caption}>
        {ticks.map((tick) => (
          <g>
            <line x1={left} y1={y(tick).toFixed(1)} x2={width} y2={y(tick).toFixed(1)} />
            <text class="y" x={left - 6} y={(y(tick) + 4).toFixed(1)} text-anchor="end">
              {numbers.format(tick)}
            </text>
          </g>
        ))}
        <line class="axis" x1={left} y1={top} x2={left} y2={top + plot.height} />
        {series.map((point, index) => {
          const barHeight = point.visits === 0 ? 0 : Math.max(2, (point.visits / max) * plot.height);
          return (
            <rect
              x={(left + index * slot + slot * 0.1).toFixed(1)}
              y={(top + plot.height - barHeight).toFixed(1)}
              width={(slot * 0.8).toFixed(1)}
              height={barHeight.toFixed(1)}
            >
              <title>{`${period.format(new Date(point.t))}: ${numbers.format(point.visits)}`}</title>
            </rect>
          );
        })}
        {labelled.map((index, at) => (
          <text
            class="x"
            x={(left + index * slot + slot / 2).toFixed(1)}
            y={height - 4}
            text-anchor={at === 0 && labelled.length > 1 ? 'start' : at === labelled.length - 1 && labelled.length > 1 ? 'end' : 'middle'}
          >
            {(granularity === 'hour' ? shortHourOf(locale) : shortDayOf(locale)).format(new Date(series[index]!.t))}
          </text>
        ))}
      </svg>
      <details>
        <summary>{t(granularity === 'hour' ? 'public.chart_table_hour' : 'public.chart_table')}</summary>
        <div class="wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">{t(granularity === 'hour' ? 'public.hour' : 'public.day')}</th>
                <th scope="col" class="num">
                  {t('public.count')}
                </th>
              </tr>
            </thead>
            <tbody>
              {series.map((point) => (
                <tr>
                  <td>{period.format(new Date(point.t))}</td>
                  <td class="num">{numbers.format(point.visits)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}

/** The page's address with these parameters (links carry the page's state: it has no script). */
function hrefOf(state: { period: PublicPeriod; lang?: string; link?: string }): string {
  const query = new URLSearchParams({ period: state.period });
  if (state.link) query.set('link', state.link);
  if (state.lang) query.set('lang', state.lang);
  return `?${query.toString()}`;
}

/** The period picker: a link per period (the page has no script), the one shown marked as current. */
function Periods({ period, lang, link, t }: { period: PublicPeriod; lang?: string; link?: string; t: T }) {
  return (
    <nav class="periods" aria-label={t('public.period')}>
      <ul>
        {(Object.keys(PUBLIC_PERIODS) as PublicPeriod[]).map((key) => {
          return (
            <li>
              <a href={hrefOf({ period: key, lang, link })} aria-current={key === period ? 'page' : undefined}>
                {t(`public.period.${key}` as UiKey)}
              </a>
            </li>
          );
        })}
      </ul>
    </nav>
  );
}

function Breakdown({
  dimension,
  rows,
  locale,
  t,
  filterHref,
}: {
  dimension: Dimension;
  rows: NonNullable<PublicReport['top'][Dimension]>;
  locale: Locale;
  t: T;
  /** The link breakdown's rows lead to the report narrowed to their link. */
  filterHref?: (slug: string) => string;
}) {
  const max = Math.max(1, ...rows.map((row) => row.visits));
  const numbers = numberOf(locale);
  const label = (row: (typeof rows)[number]) => {
    if (dimension === 'link') return row.slug ? `/${row.slug}` : t('public.unknown');
    if (row.value === '') return dimension === 'referrer_host' ? t('public.direct') : t('public.unknown');
    return dimension === 'city' && row.country ? `${row.value} (${row.country})` : row.value;
  };
  return (
    <div class="wrap">
      <table>
        <caption>{t(`public.top.${dimension}` as UiKey)}</caption>
        <tbody>
          {rows.map((row) => (
            <tr>
              <td class="name">
                {dimension === 'link' && row.slug && filterHref ? (
                  <a href={filterHref(row.slug)} aria-label={t('public.filter_link', { link: label(row) })}>
                    {label(row)}
                  </a>
                ) : (
                  label(row)
                )}
                <svg class="bar" viewBox="0 0 100 4" preserveAspectRatio="none" aria-hidden="true">
                  <rect width={((row.visits / max) * 100).toFixed(1)} height="4" />
                </svg>
              </td>
              <td class="num">{numbers.format(row.visits)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function cell(column: (typeof VISIT_COLUMNS)[number], value: string | number | null | undefined, locale: Locale, t: T): string {
  if (value === null || value === undefined || value === '') return '—';
  if (column === 'ts') return timeOf(locale).format(new Date(String(value)));
  if (column === 'kind') return ['visit', 'beacon', 'attack'].includes(String(value)) ? t(`public.kind.${String(value)}` as UiKey) : String(value);
  // A link's slug has no slash; an attack attempt's slug is the whole path it asked for.
  if (column === 'slug') return String(value).startsWith('/') ? String(value) : `/${String(value)}`;
  return String(value);
}

function Visits({ rows, locale, t }: { rows: Record<string, unknown>[]; locale: Locale; t: T }) {
  if (rows.length === 0) return <p class="muted">{t('public.recent_empty')}</p>;
  const columns = VISIT_COLUMNS.filter((column) => rows.some((row) => column in row));
  return (
    <div class="wrap">
      <table class="visits">
        <thead>
          <tr>
            {columns.map((column) => (
              <th scope="col">{t(`public.col.${column}` as UiKey)}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr>
              {columns.map((column) => (
                <td>{cell(column, row[column] as string | number | null | undefined, locale, t)}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The public page of a subdomain: only what its policy opens, as the public endpoints give it. */
export function renderPublicPage(data: PublicPageData, locale: Locale, product: { name: string; url: string }): string {
  const t = translatorOf(locale);
  const { page, report, visits, period, lang } = data;
  const link = report?.filters?.link;
  const heading = page.title ?? page.name;
  const numbers = numberOf(locale);
  const nothingPublic = !page.public.stats && !page.public.visits_list && !page.public.links;
  const body = (
    <Document locale={locale} title={`${heading} · ${t('public.title', { name: page.name })}`}>
      <main>
        <header class="site">
          <h1>{heading}</h1>
          <p class="muted">
            {page.url.replace(/^https?:\/\//, '').replace(/\/$/, '')}
            {page.owner?.display_name ? ` · ${t('public.by', { owner: page.owner.display_name })}` : ''}
          </p>
        </header>
        {nothingPublic ? (
          <section>
            <p>{t('public.private')}</p>
          </section>
        ) : null}
        {page.links ? (
          <section aria-labelledby="links">
            <h2 id="links">{t('public.links')}</h2>
            {page.links.length === 0 ? (
              <p class="muted">{t('public.links_empty')}</p>
            ) : (
              <ul class="links">
                {page.links.map((link) => (
                  <li>
                    <a href={link.short_url}>{link.title ?? `/${link.slug}`}</a>
                    {link.title ? <span class="muted"> · /{link.slug}</span> : null}
                    <span class="muted"> · {t('public.link_created', { date: dayOf(locale).format(new Date(link.created_at)) })}</span>
                  </li>
                ))}
              </ul>
            )}
          </section>
        ) : null}
        {report ? (
          <section aria-labelledby="stats">
            <h2 id="stats">{t('public.stats_of', { period: t(`public.period.${period}` as UiKey) })}</h2>
            <Periods period={period} lang={lang} link={link} t={t} />
            {link ? (
              <p class="filter">
                {t('public.filtered_by', { link: `/${link}` })} <a href={hrefOf({ period, lang })}>{t('public.filter_clear')}</a>
              </p>
            ) : null}
            <dl class="totals">
              {TOTALS.map(([field, key]) => (
                <div key={field}>
                  <dt>{t(key)}</dt>
                  <dd>{numbers.format(report.totals[field])}</dd>
                </div>
              ))}
            </dl>
            <p class="muted">{t('public.until', { time: timeOf(locale).format(new Date(report.range.until)) })}</p>
            {/* No empty box: before the first counted quarter hour, a sentence says why there is nothing to draw. */}
            {report.series.some((point) => point.visits > 0) ? (
              <Chart series={report.series} locale={locale} t={t} granularity={PUBLIC_PERIODS[period].granularity} range={report.range} />
            ) : (
              <p class="muted">{t('public.chart_empty')}</p>
            )}
            <div class="grid">
              {PUBLIC_DIMENSION_ORDER.map((dimension) => {
                const rows = report.top[dimension];
                return rows && rows.length > 0 ? (
                  <Breakdown dimension={dimension} rows={rows} locale={locale} t={t} filterHref={(slug) => hrefOf({ period, lang, link: slug })} />
                ) : null;
              })}
            </div>
          </section>
        ) : null}
        {visits ? (
          <section aria-labelledby="recent">
            <h2 id="recent">{t('public.recent')}</h2>
            <Visits rows={visits} locale={locale} t={t} />
          </section>
        ) : null}
        <Footer t={t} product={product}>
          {page.public.publish_delay_sec > 0 && (report || visits) ? <p>{t('public.delay', { delay: delayText(t, page.public.publish_delay_sec) })}</p> : null}
        </Footer>
      </main>
    </Document>
  );
  return html(body);
}

/** The page of a short host nobody claimed: a 404 that says what happened and where to go. */
export function renderUnknownSubdomain(name: string, host: string, locale: Locale, product: { name: string; url: string }): string {
  const t = translatorOf(locale);
  const body = (
    <Document locale={locale} title={t('public.not_found.title', { name })}>
      <main>
        <header class="site">
          <h1>{t('public.not_found.title', { name })}</h1>
        </header>
        <section>
          <p>{t('public.not_found.body', { host })}</p>
          <p>
            <a href={`${product.url}/subdomains`}>{t('public.not_found.claim')}</a>
          </p>
        </section>
        <Footer t={t} product={product} />
      </main>
    </Document>
  );
  return html(body);
}
