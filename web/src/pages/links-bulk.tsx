// Bulk links (issue 40, item 5): a CSV or JSON file the caller picks is checked here for its shape
// (readable, not empty, at most 10 000 rows), then sent as it is to POST /api/v1/links/bulk, which
// validates every row. The caller chooses all-or-none (nothing is created when a row is refused) or
// valid-only (the valid rows are created); the answer's counts and each refused row (row, field, code,
// message) are shown. The page links to the bulk CSV export (GET /api/v1/links/export.csv), which
// imports again as it is.
import { useState } from 'preact/hooks';
import { api, ApiError, call, type Schemas } from '../api/client.js';
import { formatNumber } from '../app/format.js';
import { useI18n } from '../app/i18n.js';
import { ErrorState, Field, Notice, PageHeader } from '../app/ui.js';
import './links.css';

type Mode = 'all_or_none' | 'valid_only';
type RowError = Schemas['BulkRowError'];
interface Outcome {
  mode: Mode;
  rows: number;
  created: number;
  existing: number;
  errors: RowError[];
}
/** The API's own limit (BULK_MAX_ROWS): a larger file is refused here before it is sent. */
const MAX_ROWS = 10_000;
/** Refused rows the page lists; the count above the table says how many there are in all. */
const SHOWN_ERRORS = 500;

/** A JSON upload: an array of links or `{"links": [...]}`; undefined when it is neither. */
function jsonLinks(text: string): Record<string, unknown>[] | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const links = Array.isArray(parsed) ? parsed : (parsed as { links?: unknown } | null)?.links;
  if (!Array.isArray(links) || !links.every((row) => typeof row === 'object' && row !== null && !Array.isArray(row))) return undefined;
  return links as Record<string, unknown>[];
}

/** Data lines of a CSV (after its header), counted without parsing quoted line breaks apart. */
function csvRows(text: string): number {
  let rows = 0;
  let quoted = false;
  let content = false;
  for (const char of text.replace(/^\uFEFF/, '')) {
    if (char === '"') quoted = !quoted;
    if (!quoted && (char === '\n' || char === '\r')) {
      if (content) rows += 1;
      content = false;
    } else if (char.trim() !== '') content = true;
  }
  if (content) rows += 1;
  return Math.max(0, rows - 1);
}

export function LinksBulkPage() {
  const { t, locale } = useI18n();
  const [file, setFile] = useState<File | undefined>(undefined);
  const [mode, setMode] = useState<Mode>('all_or_none');
  const [sending, setSending] = useState(false);
  const [fileError, setFileError] = useState<string | undefined>(undefined);
  const [failure, setFailure] = useState<Error | undefined>(undefined);
  const [outcome, setOutcome] = useState<Outcome | undefined>(undefined);

  const submit = async (event: Event) => {
    event.preventDefault();
    setFileError(undefined);
    setFailure(undefined);
    setOutcome(undefined);
    if (!file) {
      setFileError(t('bulk.file_missing'));
      return;
    }
    const text = await file.text();
    const isJson = /\.json$/i.test(file.name) || file.type === 'application/json' || /^\s*[[{]/.test(text.replace(/^\uFEFF/, ''));
    const links = isJson ? jsonLinks(text) : undefined;
    if (isJson && !links) {
      setFileError(t('bulk.json_invalid'));
      return;
    }
    const rows = links ? links.length : csvRows(text);
    if (rows === 0) {
      setFileError(t('bulk.file_empty'));
      return;
    }
    if (rows > MAX_ROWS) {
      setFileError(t('bulk.too_many', { rows: formatNumber(locale, rows), max: formatNumber(locale, MAX_ROWS) }));
      return;
    }
    setSending(true);
    try {
      const request = links
        ? api.POST('/api/v1/links/bulk', { body: { links, mode } })
        : api.POST('/api/v1/links/bulk', {
            params: { query: { mode } },
            body: text,
            headers: { 'Content-Type': 'text/csv' },
            bodySerializer: (body: unknown) => String(body),
          });
      const { data } = await call(request);
      setOutcome({ mode: data.mode, rows: data.rows, created: data.created.length, existing: data.existing.length, errors: data.errors });
    } catch (caught) {
      // all_or_none with a refused row: 422 with every refused row in details.errors, nothing created.
      if (caught instanceof ApiError && caught.code === 'validation_error' && Array.isArray(caught.details.errors)) {
        setOutcome({
          mode: 'all_or_none',
          rows: typeof caught.details.rows === 'number' ? caught.details.rows : rows,
          created: 0,
          existing: 0,
          errors: caught.details.errors as RowError[],
        });
      } else if (caught instanceof ApiError && caught.status === 422 && caught.details.body !== undefined) {
        setFileError(caught.message);
      } else {
        setFailure(caught instanceof Error ? caught : new Error(String(caught)));
      }
    } finally {
      setSending(false);
    }
  };

  return (
    <>
      <PageHeader title={t('bulk.title')}>
        <a class="button" href="/api/v1/links/export.csv" download="links.csv">
          {t('bulk.export')}
        </a>
      </PageHeader>
      <p class="muted">{t('bulk.intro', { max: formatNumber(locale, MAX_ROWS) })}</p>
      <form class="card bulk-form" onSubmit={submit} noValidate>
        <Field id="bulk-file" label={t('bulk.file')} hint={t('bulk.file_hint')} error={fileError}>
          <input
            id="bulk-file"
            type="file"
            accept=".csv,.json,text/csv,application/json"
            onChange={(event) => {
              setFile(event.currentTarget.files?.[0]);
              setFileError(undefined);
            }}
            disabled={sending}
            aria-describedby="bulk-file-hint"
            aria-invalid={fileError ? true : undefined}
          />
        </Field>
        <fieldset>
          <legend>{t('bulk.mode')}</legend>
          {(['all_or_none', 'valid_only'] as const).map((name) => (
            <label key={name} class="checkbox">
              <input type="radio" name="bulk-mode" value={name} checked={mode === name} onChange={() => setMode(name)} disabled={sending} />
              <span>{t(name === 'all_or_none' ? 'bulk.mode_all_or_none' : 'bulk.mode_valid_only')}</span>
            </label>
          ))}
        </fieldset>
        <div class="form-actions">
          <button type="submit" class="button-primary" disabled={sending}>
            {sending ? t('bulk.sending') : t('bulk.send')}
          </button>
        </div>
        {failure ? <ErrorState error={failure} /> : null}
      </form>
      {outcome ? <BulkOutcome outcome={outcome} /> : null}
    </>
  );
}

function BulkOutcome({ outcome }: { outcome: Outcome }) {
  const { t, locale } = useI18n();
  const n = (value: number) => formatNumber(locale, value);
  const refused = outcome.errors.length;
  return (
    <section class="card bulk-outcome" aria-labelledby="bulk-outcome-title">
      <h2 id="bulk-outcome-title">{t('bulk.outcome')}</h2>
      {outcome.mode === 'all_or_none' && refused > 0 ? (
        <Notice kind="error">{t('bulk.none_created', { refused: n(refused), rows: n(outcome.rows) })}</Notice>
      ) : (
        <Notice kind={refused > 0 ? 'info' : 'ok'}>
          {t('bulk.summary', { created: n(outcome.created), existing: n(outcome.existing), refused: n(refused), rows: n(outcome.rows) })}
        </Notice>
      )}
      {outcome.created > 0 ? (
        <p>
          <a href="/links">{t('bulk.to_links')}</a>
        </p>
      ) : null}
      {refused > 0 ? (
        <div class="table-wrap">
          <table>
            <caption>{refused > SHOWN_ERRORS ? t('bulk.errors_first', { shown: n(SHOWN_ERRORS), refused: n(refused) }) : t('bulk.errors')}</caption>
            <thead>
              <tr>
                <th scope="col">{t('bulk.row')}</th>
                <th scope="col">{t('bulk.field')}</th>
                <th scope="col">{t('bulk.code')}</th>
                <th scope="col">{t('bulk.message')}</th>
              </tr>
            </thead>
            <tbody>
              {outcome.errors.slice(0, SHOWN_ERRORS).map((error) => (
                <tr key={`${error.row}-${error.field ?? ''}`}>
                  <td>{n(error.row)}</td>
                  <td class="mono">{error.field ?? '—'}</td>
                  <td class="mono">{error.code}</td>
                  <td>{error.message}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}
