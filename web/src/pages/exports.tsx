// Exports: the caller's visits as CSV, JSON, XLSX or a PDF report (GET /api/v1/export), for a
// subdomain, a link, a range of days in the viewer's zone and the visit filters. The file is read
// as a stream in the page, so the page can show what has arrived (bytes, and rows against the
// server's `X-Export-Rows` for CSV and JSON, whose rows are lines) and cancel it; once complete it
// is saved from a Blob with the server's file name. The typed client parses JSON envelopes, so the
// download is a plain fetch whose URL is built from the operation's typed query.
import { useLocation } from 'preact-iso';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, load, reachableSubdomains, type ApiErrorBody, type paths } from '../api/client.js';
import { formatNumber, viewerTimeZone } from '../app/format.js';
import { useI18n, type UiKey } from '../app/i18n.js';
import { Async, Empty, ErrorState, Field, fieldError, Notice, PageHeader, useLoad } from '../app/ui.js';
import './exports.css';

type ExportQuery = paths['/api/v1/export']['get']['parameters']['query'];
type Format = ExportQuery['format'];
type Kind = NonNullable<ExportQuery['kind']>;

const FORMATS: Format[] = ['csv', 'json', 'xlsx', 'pdf'];
const KINDS: Kind[] = ['visit', 'bot', 'attack', 'beacon'];

interface Form {
  format: Format;
  subdomain: string;
  linkId: string;
  since: string;
  until: string;
  country: string;
  kind: '' | Kind;
  isBot: '' | 'true' | 'false';
}

/** Midnight starting a `yyyy-mm-dd` day in the viewer's zone, as ISO 8601 UTC; `days` later for an end bound. */
function dayStart(day: string, days = 0): string | undefined {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(day);
  if (!match) return undefined;
  return new Date(Number(match[1]), Number(match[2]) - 1, Number(match[3]) + days).toISOString();
}

/** The export's query from the form: the last day is inclusive, so the bound is the next midnight. */
function queryOf(form: Form, lang: string): ExportQuery {
  const query: ExportQuery = { format: form.format, lang };
  if (form.subdomain) query.subdomain = form.subdomain;
  if (form.linkId) query.link_id = form.linkId;
  const since = dayStart(form.since);
  const until = dayStart(form.until, 1);
  if (since) query.since = since;
  if (until) query.until = until;
  if (form.country.trim()) query.country = form.country.trim();
  if (form.kind) query.kind = form.kind;
  if (form.isBot) query.is_bot = form.isBot;
  return query;
}

function exportUrl(query: ExportQuery): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined) search.set(key, String(value));
  return `/api/v1/export?${search}`;
}

/** The file name from `Content-Disposition: attachment; filename="…"`. */
function filenameOf(response: Response, format: Format): string {
  const match = /filename="([^"]+)"/.exec(response.headers.get('content-disposition') ?? '');
  return match?.[1] ?? `visits.${format}`;
}

function formatBytes(locale: string, bytes: number): string {
  const units = ['byte', 'kilobyte', 'megabyte', 'gigabyte'] as const;
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  // Bytes spelled out ("0 bytes"; the short form says "0 byte"), the larger units abbreviated.
  return new Intl.NumberFormat(locale, {
    style: 'unit',
    unit: units[unit],
    unitDisplay: unit === 0 ? 'long' : 'short',
    maximumFractionDigits: unit === 0 ? 0 : 1,
  }).format(value);
}

type Run =
  | { state: 'idle' }
  | { state: 'running'; bytes: number; rows: number; total?: number; format: Format }
  | { state: 'cancelled' }
  | { state: 'failed'; error: Error }
  | { state: 'done'; filename: string; bytes: number; url: string };

const NEWLINE = 0x0a;

/** Saves a finished file: a click on an <a download> with its Blob URL, as a user's click on "Save again" does. */
function save(url: string, filename: string): void {
  const link = document.createElement('a');
  link.href = url;
  link.download = filename;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
}

/** Newline bytes in a chunk: CSV and JSON exports write one visit a line. */
function lines(chunk: Uint8Array): number {
  let count = 0;
  for (let index = chunk.indexOf(NEWLINE); index !== -1; index = chunk.indexOf(NEWLINE, index + 1)) count += 1;
  return count;
}

export function ExportsPage() {
  const { t, locale } = useI18n();
  const { query: location } = useLocation();
  const [form, setForm] = useState<Form>({
    format: 'csv',
    subdomain: location.subdomain ?? '',
    linkId: location.link_id ?? '',
    since: '',
    until: '',
    country: '',
    kind: '',
    isBot: '',
  });
  const [run, setRun] = useState<Run>({ state: 'idle' });
  const controller = useRef<AbortController | undefined>(undefined);

  const subdomains = useLoad((signal) => reachableSubdomains(signal), []);
  const links = useLoad(
    async (signal) =>
      form.subdomain ? (await load(api.GET('/api/v1/links', { params: { query: { subdomain: form.subdomain, limit: 100 } }, signal }))).links : [],
    [form.subdomain],
  );

  // Leaving the page stops a running export and frees a finished file's memory.
  useEffect(() => () => controller.current?.abort(), []);
  useEffect(() => () => (run.state === 'done' ? URL.revokeObjectURL(run.url) : undefined), [run]);

  const set = <K extends keyof Form>(key: K, value: Form[K]) =>
    setForm((current) => ({ ...current, [key]: value, ...(key === 'subdomain' ? { linkId: '' } : {}) }));
  const query = queryOf(form, locale);

  const start = async (event: Event) => {
    event.preventDefault();
    controller.current?.abort();
    const abort = new AbortController();
    controller.current = abort;
    const format = form.format;
    setRun({ state: 'running', bytes: 0, rows: 0, format });
    try {
      // A backwards range would export nothing: said on its field instead (the API counts it as empty).
      if (form.since && form.until && form.since > form.until) {
        throw new ApiError(422, { code: 'validation_error', message: t('exports.range_backwards'), details: { since: 'must be before until' } });
      }
      const response = await fetch(exportUrl(query), { credentials: 'same-origin', headers: { 'Accept-Language': locale }, signal: abort.signal });
      if (!response.ok) {
        const body = (await response.json().catch(() => undefined)) as { error?: ApiErrorBody } | undefined;
        throw new ApiError(response.status, body?.error, response);
      }
      const total = Number(response.headers.get('x-export-rows') ?? Number.NaN);
      const filename = filenameOf(response, format);
      // Chunks are kept for the Blob: the in-page reader is what gives progress and Cancel. An
      // export too large to hold in the tab's memory takes the direct link below instead, which
      // the browser streams to disk with its own progress.
      const chunks: Uint8Array<ArrayBuffer>[] = [];
      let bytes = 0;
      let newlines = 0;
      const reader = response.body!.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks.push(value);
        bytes += value.byteLength;
        if (format === 'csv' || format === 'json') newlines += lines(value);
        // CSV: the header line is not a visit. JSON: each visit starts a line after the opening `[`.
        const rows = Math.max(0, format === 'csv' ? newlines - 1 : newlines);
        setRun({ state: 'running', bytes, rows, total: Number.isFinite(total) ? total : undefined, format });
      }
      const blob = new Blob(chunks, { type: response.headers.get('content-type') ?? 'application/octet-stream' });
      const url = URL.createObjectURL(blob);
      setRun({ state: 'done', filename, bytes, url });
      save(url, filename);
    } catch (caught) {
      if (abort.signal.aborted) setRun({ state: 'cancelled' });
      else setRun({ state: 'failed', error: caught instanceof Error ? caught : new Error(String(caught)) });
    } finally {
      if (controller.current === abort) controller.current = undefined;
    }
  };

  const cancel = () => controller.current?.abort();
  const failed = run.state === 'failed' ? run.error : undefined;
  const running = run.state === 'running';

  return (
    <>
      <PageHeader title={t('exports.title')} />
      <p class="muted">{t('exports.intro')}</p>
      <Async loaded={subdomains}>
        {({ subdomains: owned }) => {
          if (owned.length === 0 && !form.subdomain) {
            return (
              <Empty>
                <p>{t('exports.no_subdomains')}</p>
              </Empty>
            );
          }
          // A subdomain named in the address (a link from another page) is offered even if it is not the caller's: the API decides.
          const names = owned.map((subdomain) => subdomain.name);
          if (form.subdomain && !names.includes(form.subdomain)) names.push(form.subdomain);
          // The caller's own links carry their id (a public link, of another owner's subdomain, does not).
          const linkOptions = links.state === 'ready' ? links.data.flatMap((link) => ('id' in link ? [link] : [])) : [];
          return (
            <form class="card export-form" onSubmit={start}>
              <fieldset>
                <legend>{t('exports.format')}</legend>
                <div class="export-formats">
                  {FORMATS.map((format) => (
                    <label key={format} class="checkbox">
                      <input
                        type="radio"
                        name="export-format"
                        value={format}
                        checked={form.format === format}
                        onChange={() => set('format', format)}
                        disabled={running}
                      />
                      <span>{t(`exports.format_${format}` as UiKey)}</span>
                    </label>
                  ))}
                </div>
              </fieldset>
              <div class="form-grid">
                <Field id="export-subdomain" label={t('exports.subdomain')}>
                  <select id="export-subdomain" value={form.subdomain} onChange={(event) => set('subdomain', event.currentTarget.value)} disabled={running}>
                    <option value="">{t('exports.all_subdomains')}</option>
                    {names.map((name) => (
                      <option key={name} value={name}>
                        {name}
                      </option>
                    ))}
                  </select>
                </Field>
                <Field id="export-link" label={t('exports.link')} error={links.state === 'error' ? links.error.message : undefined}>
                  <select
                    id="export-link"
                    value={form.linkId}
                    onChange={(event) => set('linkId', event.currentTarget.value)}
                    disabled={running || !form.subdomain}
                  >
                    <option value="">{links.state === 'loading' && form.subdomain ? t('exports.links_loading') : t('exports.all_links')}</option>
                    {form.linkId && !linkOptions.some((link) => link.id === form.linkId) ? <option value={form.linkId}>{form.linkId}</option> : null}
                    {linkOptions.map((link) => (
                      <option key={link.id} value={link.id}>
                        {`/${link.slug}`}
                        {link.title ? ` · ${link.title}` : ''}
                      </option>
                    ))}
                  </select>
                </Field>
                <Field
                  id="export-since"
                  label={t('exports.since')}
                  hint={t('exports.range_hint', { zone: viewerTimeZone() })}
                  error={fieldError(failed, 'since')}
                >
                  <input
                    id="export-since"
                    type="date"
                    value={form.since}
                    onInput={(event) => set('since', event.currentTarget.value)}
                    disabled={running}
                    aria-describedby={`export-since-hint${fieldError(failed, 'since') ? ' export-since-error' : ''}`}
                  />
                </Field>
                <Field id="export-until" label={t('exports.until')} error={fieldError(failed, 'until')}>
                  <input id="export-until" type="date" value={form.until} onInput={(event) => set('until', event.currentTarget.value)} disabled={running} />
                </Field>
                <Field id="export-country" label={t('exports.country')} hint={t('exports.country_hint')} error={fieldError(failed, 'country')}>
                  <input
                    id="export-country"
                    type="text"
                    maxLength={2}
                    autocomplete="off"
                    value={form.country}
                    onInput={(event) => set('country', event.currentTarget.value)}
                    disabled={running}
                    aria-describedby={`export-country-hint${fieldError(failed, 'country') ? ' export-country-error' : ''}`}
                  />
                </Field>
                <Field id="export-kind" label={t('exports.kind')}>
                  <select id="export-kind" value={form.kind} onChange={(event) => set('kind', event.currentTarget.value as Form['kind'])} disabled={running}>
                    <option value="">{t('exports.any')}</option>
                    {KINDS.map((kind) => (
                      <option key={kind} value={kind}>
                        {t(`exports.kind_${kind}` as UiKey)}
                      </option>
                    ))}
                  </select>
                </Field>
                <Field id="export-bots" label={t('exports.is_bot')}>
                  <select id="export-bots" value={form.isBot} onChange={(event) => set('isBot', event.currentTarget.value as Form['isBot'])} disabled={running}>
                    <option value="">{t('exports.any')}</option>
                    <option value="true">{t('exports.bots_only')}</option>
                    <option value="false">{t('exports.humans_only')}</option>
                  </select>
                </Field>
              </div>
              <div class="form-actions">
                <button type="submit" class="button-primary" disabled={running}>
                  {t('exports.start')}
                </button>
                {running ? (
                  <button type="button" class="button-danger" onClick={cancel}>
                    {t('exports.cancel')}
                  </button>
                ) : null}
              </div>
              <p class="export-direct">
                {/* The alternative for exports too large for the tab: the browser downloads it to disk as it streams (same filters). */}
                <a href={exportUrl(query)} download aria-describedby="export-direct-hint">
                  {t('exports.direct')}
                </a>{' '}
                <small class="muted" id="export-direct-hint">
                  {t('exports.direct_hint')}
                </small>
              </p>
              <ExportStatus run={run} />
            </form>
          );
        }}
      </Async>
    </>
  );
}

function ExportStatus({ run }: { run: Run }) {
  const { t, locale } = useI18n();
  if (run.state === 'idle') return null;
  if (run.state === 'cancelled') return <Notice kind="info">{t('exports.cancelled')}</Notice>;
  // A refusal (403) gets the forbidden wording; a refused filter (422) is shown on its field too, so a line says it.
  if (run.state === 'failed')
    return run.error instanceof ApiError && run.error.status === 403 ? <ErrorState error={run.error} /> : <Notice kind="error">{run.error.message}</Notice>;
  if (run.state === 'done') {
    return (
      <Notice kind="ok">
        {t('exports.done', { filename: run.filename, bytes: formatBytes(locale, run.bytes) })}{' '}
        <a href={run.url} download={run.filename}>
          {t('exports.save_again')}
        </a>
      </Notice>
    );
  }
  const counted = run.format === 'csv' || run.format === 'json';
  // Rows are counted from line breaks; the announced total is an upper bound, so the bar stops at it.
  const known = counted && run.total !== undefined && run.total > 0;
  return (
    <div class="export-progress" role="status" aria-live="polite">
      <p>{t('exports.running')}</p>
      {known ? (
        <progress max={run.total} value={Math.min(run.rows, run.total!)} aria-label={t('exports.progress')} />
      ) : (
        <progress aria-label={t('exports.progress')} />
      )}
      <p class="muted">
        {t('exports.received', { bytes: formatBytes(locale, run.bytes) })}
        {counted ? ' · ' : ''}
        {known
          ? t('exports.rows_of', { rows: formatNumber(locale, Math.min(run.rows, run.total!)), total: formatNumber(locale, run.total) })
          : counted
            ? t('exports.rows', { rows: formatNumber(locale, run.rows) })
            : ''}
      </p>
    </div>
  );
}
