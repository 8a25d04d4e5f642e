// Imports (issue 39): upload a Bitly, Dub or Shlink CSV export or a YOURLS database export, or name a
// Shlink, Kutt or YOURLS installation and its credential, into one of the caller's subdomains
// (POST /api/v1/imports), then watch the job (GET /api/v1/imports/{id}, polled each second): its
// status, a progress bar of rows read against the file's rows, the counts per outcome and, once it
// has finished, the rows that were not imported. The recent imports are listed below, each to show.
import { useLocation } from 'preact-iso';
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, call, load, reachableSubdomains, type Schemas } from '../api/client.js';
import { formatDateTime, formatNumber } from '../app/format.js';
import { useI18n, type UiKey } from '../app/i18n.js';
import { Async, Empty, ErrorState, Field, Notice, PageHeader, useLoad } from '../app/ui.js';
import './imports.css';

type Source = 'bitly' | 'dub' | 'shlink' | 'yourls' | 'shlink-api' | 'kutt' | 'yourls-api';
type ImportState = Schemas['Import'];
type ReportRow = Schemas['ImportReportRow'];
type StartImport = Schemas['StartImport'];

const SOURCES: Source[] = ['bitly', 'dub', 'shlink', 'yourls', 'shlink-api', 'kutt', 'yourls-api'];
/** Sources read from a file the caller picks; the others are installations reached over their API. */
const FILE_SOURCES: Source[] = ['bitly', 'dub', 'shlink', 'yourls'];
/** Sources with a visit history the caller may leave out. */
const HISTORY_SOURCES: Source[] = ['shlink-api', 'yourls'];
/** The form's fields the API may name in a refusal (details: the field, or `missing`: the fields). */
const FIELDS = ['file', 'prefix', 'url', 'api_key', 'signature', 'username', 'password'] as const;
type FieldName = (typeof FIELDS)[number];
const COUNTS = ['created', 'would_create', 'exists', 'conflict', 'refused', 'unreadable'] as const;
const PROBLEMS = ['conflict', 'refused', 'unreadable'] as const;
/** How often a running import is polled. */
const POLL_MS = 1_000;
/** Rows not imported the page lists (the API and `npm run import` give them all). */
const PROBLEM_ROWS = 200;

const finished = (state: ImportState) => state.status === 'completed' || state.status === 'failed';

export function ImportsPage() {
  const { t } = useI18n();
  const { query: location } = useLocation();
  const [source, setSource] = useState<Source>('shlink');
  const [subdomain, setSubdomain] = useState(location.subdomain ?? '');
  const [file, setFile] = useState<File | undefined>(undefined);
  const [dryRun, setDryRun] = useState(false);
  const [history, setHistory] = useState(true);
  const [url, setUrl] = useState('');
  const [prefix, setPrefix] = useState('yourls_');
  const [apiKey, setApiKey] = useState('');
  const [yourlsAuth, setYourlsAuth] = useState<'signature' | 'password'>('signature');
  const [signature, setSignature] = useState('');
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [starting, setStarting] = useState(false);
  const [failure, setFailure] = useState<Error | undefined>(undefined);
  const [watched, setWatched] = useState<string | undefined>(undefined);
  /** The import this page started last (not one shown from the list). */
  const [started, setStarted] = useState<string | undefined>(undefined);

  const subdomains = useLoad((signal) => reachableSubdomains(signal, 'editor'), []);
  const recent = useLoad((signal) => load(api.GET('/api/v1/imports', { params: { query: { limit: 10 } }, signal })), [watched]);

  const start = async (event: Event) => {
    event.preventDefault();
    setFailure(undefined);
    // The select shows the first subdomain until another is chosen: its value is the one to use.
    const into = String(new FormData(event.currentTarget as HTMLFormElement).get('subdomain') ?? subdomain);
    const fromFile = FILE_SOURCES.includes(source);
    if (fromFile && !file) {
      setFailure(new ApiError(422, { code: 'validation_error', message: t('imports.file_missing'), details: { file: 'required' } }));
      return;
    }
    setStarting(true);
    try {
      const common = { subdomain: into, dry_run: dryRun };
      let body: StartImport;
      if (source === 'yourls') body = { ...common, source, file: await file!.text(), prefix, history };
      else if (fromFile) body = { ...common, source: source as 'bitly' | 'dub' | 'shlink', file: await file!.text() };
      else if (source === 'yourls-api')
        body = yourlsAuth === 'signature' ? { ...common, source, url, signature } : { ...common, source, url, username, password };
      else body = { ...common, source: source as 'shlink-api' | 'kutt', url, api_key: apiKey, history: source === 'shlink-api' ? history : false };
      const { data } = await call(api.POST('/api/v1/imports', { body }));
      // The credential has done its work: the page keeps no copy of it.
      setApiKey('');
      setSignature('');
      setPassword('');
      setStarted(data.id);
      setWatched(data.id);
    } catch (caught) {
      setFailure(caught instanceof Error ? caught : new Error(String(caught)));
    } finally {
      setStarting(false);
    }
  };

  /** The refusal's message when it names this field (in its details, or among the missing ones). */
  const fieldError = (name: FieldName): string | undefined => {
    if (!(failure instanceof ApiError)) return undefined;
    const missing = failure.details.missing;
    return failure.details[name] !== undefined || (Array.isArray(missing) && missing.includes(name)) ? failure.message : undefined;
  };
  const onField = failure instanceof ApiError && FIELDS.some((name) => fieldError(name) !== undefined);
  const fromFile = FILE_SOURCES.includes(source);
  /** The import just started, when it fails on a field of the form (an address refused, a wrong key), says why on the field too. */
  const finishedImport = (state: ImportState) => {
    recent.reload();
    const details = state.error?.details ?? {};
    const field = FIELDS.find((name) => details[name] !== undefined);
    if (state.id === started && state.status === 'failed' && field) {
      setFailure(new ApiError(422, { code: state.error!.code, message: String(details[field]), details }));
    }
  };
  const secretInput = (id: string, value: string, set: (next: string) => void) => (
    <input
      id={id}
      type="password"
      autoComplete="off"
      spellcheck={false}
      value={value}
      onInput={(event) => set(event.currentTarget.value)}
      disabled={starting}
      aria-invalid={fieldError(id.replace('import-', '').replace('-', '_') as FieldName) ? true : undefined}
    />
  );

  return (
    <>
      <PageHeader title={t('imports.title')} />
      <p class="muted">{t('imports.intro')}</p>
      <Async loaded={subdomains}>
        {({ subdomains: owned }) => {
          if (owned.length === 0 && !subdomain) {
            return (
              <Empty>
                <p>{t('imports.no_subdomains')}</p>
              </Empty>
            );
          }
          // A subdomain named in the address (a link from another page) is offered even if it is not the caller's: the API decides.
          const names = owned.map(({ name }) => name);
          if (subdomain && !names.includes(subdomain)) names.push(subdomain);
          const chosen = subdomain || names[0]!;
          return (
            <form class="card import-form" onSubmit={start}>
              <fieldset>
                <legend>{t('imports.source')}</legend>
                <div class="import-sources">
                  {SOURCES.map((name) => (
                    <label key={name} class="checkbox">
                      <input
                        type="radio"
                        name="import-source"
                        value={name}
                        checked={source === name}
                        onChange={() => {
                          setSource(name);
                          setFailure(undefined);
                        }}
                        disabled={starting}
                      />
                      <span>{t(`imports.source_${name}` as UiKey)}</span>
                    </label>
                  ))}
                </div>
              </fieldset>
              <div class="form-grid">
                <Field id="import-subdomain" label={t('imports.subdomain')}>
                  <select
                    id="import-subdomain"
                    name="subdomain"
                    value={chosen}
                    onChange={(event) => setSubdomain(event.currentTarget.value)}
                    disabled={starting}
                  >
                    {names.map((name) => (
                      <option key={name} value={name}>
                        {name}
                      </option>
                    ))}
                  </select>
                </Field>
                {fromFile ? (
                  <Field
                    id="import-file"
                    label={source === 'yourls' ? t('imports.sql_file') : t('imports.file')}
                    hint={t('imports.file_hint')}
                    error={fieldError('file')}
                  >
                    <input
                      id="import-file"
                      type="file"
                      accept={source === 'yourls' ? '.sql,application/sql,text/plain' : '.csv,text/csv'}
                      onChange={(event) => setFile(event.currentTarget.files?.[0])}
                      disabled={starting}
                      aria-describedby="import-file-hint"
                    />
                  </Field>
                ) : (
                  <Field id="import-url" label={t('imports.url')} hint={t('imports.url_hint')} error={fieldError('url')}>
                    <input
                      id="import-url"
                      type="url"
                      required
                      autoComplete="off"
                      spellcheck={false}
                      placeholder="https://s.example"
                      value={url}
                      onInput={(event) => setUrl(event.currentTarget.value)}
                      disabled={starting}
                      aria-describedby="import-url-hint"
                      aria-invalid={fieldError('url') ? true : undefined}
                    />
                  </Field>
                )}
                {source === 'yourls' ? (
                  <Field id="import-prefix" label={t('imports.prefix')} hint={t('imports.prefix_hint')} error={fieldError('prefix')}>
                    <input
                      id="import-prefix"
                      type="text"
                      autoComplete="off"
                      spellcheck={false}
                      pattern="[A-Za-z0-9_]{0,64}"
                      value={prefix}
                      onInput={(event) => setPrefix(event.currentTarget.value)}
                      disabled={starting}
                      aria-describedby="import-prefix-hint"
                    />
                  </Field>
                ) : null}
                {source === 'shlink-api' || source === 'kutt' ? (
                  <Field id="import-api-key" label={t('imports.api_key')} error={fieldError('api_key')}>
                    {secretInput('import-api-key', apiKey, setApiKey)}
                  </Field>
                ) : null}
              </div>
              {source === 'yourls-api' ? (
                <fieldset>
                  <legend>{t('imports.yourls_auth')}</legend>
                  <div class="import-sources">
                    {(['signature', 'password'] as const).map((way) => (
                      <label key={way} class="checkbox">
                        <input
                          type="radio"
                          name="import-yourls-auth"
                          value={way}
                          checked={yourlsAuth === way}
                          onChange={() => setYourlsAuth(way)}
                          disabled={starting}
                        />
                        <span>{t(`imports.yourls_auth_${way}` as UiKey)}</span>
                      </label>
                    ))}
                  </div>
                  <div class="form-grid">
                    {yourlsAuth === 'signature' ? (
                      <Field id="import-signature" label={t('imports.signature')} error={fieldError('signature')}>
                        {secretInput('import-signature', signature, setSignature)}
                      </Field>
                    ) : (
                      <>
                        <Field id="import-username" label={t('imports.username')} error={fieldError('username')}>
                          <input
                            id="import-username"
                            type="text"
                            autoComplete="off"
                            spellcheck={false}
                            value={username}
                            onInput={(event) => setUsername(event.currentTarget.value)}
                            disabled={starting}
                          />
                        </Field>
                        <Field id="import-password" label={t('imports.password')} error={fieldError('password')}>
                          {secretInput('import-password', password, setPassword)}
                        </Field>
                      </>
                    )}
                  </div>
                </fieldset>
              ) : null}
              {HISTORY_SOURCES.includes(source) ? (
                <label class="checkbox">
                  <input type="checkbox" checked={history} onChange={(event) => setHistory(event.currentTarget.checked)} disabled={starting} />
                  <span>{t('imports.history')}</span>
                </label>
              ) : null}
              <label class="checkbox">
                <input type="checkbox" checked={dryRun} onChange={(event) => setDryRun(event.currentTarget.checked)} disabled={starting} />
                <span>{t('imports.dry_run')}</span>
              </label>
              <div class="form-actions">
                <button type="submit" class="button-primary" disabled={starting}>
                  {starting ? t('imports.starting') : t('imports.start')}
                </button>
              </div>
              {failure && !onField ? (
                failure instanceof ApiError && failure.status === 403 ? (
                  <ErrorState error={failure} />
                ) : (
                  <Notice kind="error">{failure.message}</Notice>
                )
              ) : null}
            </form>
          );
        }}
      </Async>
      {watched ? <ImportProgress key={watched} id={watched} onFinished={finishedImport} /> : null}
      <section class="card import-recent" aria-labelledby="import-recent-title">
        <h2 id="import-recent-title">{t('imports.recent')}</h2>
        <Async loaded={recent}>
          {({ imports }) =>
            imports.length === 0 ? (
              <Empty>
                <p>{t('imports.none')}</p>
              </Empty>
            ) : (
              <RecentImports imports={imports} onShow={setWatched} />
            )
          }
        </Async>
      </section>
    </>
  );
}

function RecentImports({ imports, onShow }: { imports: ImportState[]; onShow: (id: string) => void }) {
  const { t, locale } = useI18n();
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">{t('imports.when')}</th>
            <th scope="col">{t('imports.subdomain')}</th>
            <th scope="col">{t('imports.source')}</th>
            <th scope="col">{t('imports.outcome')}</th>
            <th scope="col">
              <span class="visually-hidden">{t('imports.show')}</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {imports.map((row) => (
            <tr key={row.id}>
              <td>{formatDateTime(locale, row.created_at)}</td>
              <td class="mono">{row.subdomain}</td>
              <td>
                {row.source}
                {row.dry_run ? ` (${t('imports.dry')})` : ''}
              </td>
              <td>
                {t(`imports.status_${row.status}` as UiKey)} · <Counts counts={row.counts} />
              </td>
              <td>
                <button type="button" class="button-small" onClick={() => onShow(row.id)} aria-label={`${t('imports.show')} ${row.id}`}>
                  {t('imports.show')}
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function Counts({ counts }: { counts: ImportState['counts'] }) {
  const { t, locale } = useI18n();
  const parts = COUNTS.filter((name) => counts[name] > 0).map((name) => `${formatNumber(locale, counts[name])} ${t(`imports.count_${name}` as UiKey)}`);
  return <>{parts.length > 0 ? parts.join(', ') : '—'}</>;
}

/** One import, polled until it has finished; then the rows that were not imported. */
function ImportProgress({ id, onFinished }: { id: string; onFinished: (state: ImportState) => void }) {
  const { t, locale } = useI18n();
  const [state, setState] = useState<ImportState | undefined>(undefined);
  const [problems, setProblems] = useState<ReportRow[]>([]);
  const [error, setError] = useState<Error | undefined>(undefined);

  useEffect(() => {
    const abort = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const poll = async () => {
      try {
        const next = await load(api.GET('/api/v1/imports/{id}', { params: { path: { id }, query: { rows_limit: 0 } }, signal: abort.signal }));
        setState(next);
        if (!finished(next)) {
          timer = setTimeout(() => void poll(), POLL_MS);
          return;
        }
        const rows: ReportRow[] = [];
        for (const status of PROBLEMS) {
          if (next.counts[status] === 0) continue;
          const page = await load(
            api.GET('/api/v1/imports/{id}', { params: { path: { id }, query: { rows_status: status, rows_limit: PROBLEM_ROWS } }, signal: abort.signal }),
          );
          rows.push(...page.rows);
        }
        setProblems(rows.sort((a, b) => a.line - b.line).slice(0, PROBLEM_ROWS));
        onFinished(next);
      } catch (caught) {
        if (!abort.signal.aborted) setError(caught instanceof Error ? caught : new Error(String(caught)));
      }
    };
    void poll();
    return () => {
      abort.abort();
      if (timer) clearTimeout(timer);
    };
  }, [id]);

  if (error) return <ErrorState error={error} />;
  if (!state) return null;
  const total = state.rows_total ?? 0;
  return (
    <section class="card import-progress" aria-labelledby="import-progress-title">
      <h2 id="import-progress-title">
        {t(`imports.status_${state.status}` as UiKey)}
        {state.dry_run ? ` (${t('imports.dry')})` : ''}
      </h2>
      <div role="status" aria-live="polite">
        {total > 0 ? (
          <progress max={total} value={state.rows_read} aria-label={t('imports.progress')} />
        ) : finished(state) ? null : (
          <progress aria-label={t('imports.progress')} />
        )}
        <p class="muted">
          {total > 0
            ? t('imports.rows_of', { rows: formatNumber(locale, state.rows_read), total: formatNumber(locale, total) })
            : t('imports.rows_read', { rows: formatNumber(locale, state.rows_read) })}
          {' · '}
          <Counts counts={state.counts} />
          {state.visits && (state.visits.added > 0 || state.visits.existing > 0)
            ? ` · ${t('imports.visits', { added: formatNumber(locale, state.visits.added), existing: formatNumber(locale, state.visits.existing) })}`
            : ''}
        </p>
      </div>
      {state.status === 'failed' && state.error ? (
        <Notice kind="error">{t('imports.failed', { reason: [state.error.code, ...Object.values(state.error.details).map(String)].join(': ') })}</Notice>
      ) : null}
      {problems.length > 0 ? (
        <div class="table-wrap">
          <table>
            <caption>{t('imports.problems')}</caption>
            <thead>
              <tr>
                <th scope="col">{t('imports.line')}</th>
                <th scope="col">{t('imports.slug')}</th>
                <th scope="col">{t('imports.outcome')}</th>
                <th scope="col">{t('imports.reason')}</th>
              </tr>
            </thead>
            <tbody>
              {problems.map((row) => (
                <tr key={row.line}>
                  <td>{formatNumber(locale, row.line)}</td>
                  <td class="mono">{row.slug ?? '—'}</td>
                  <td>{t(`imports.count_${row.status}` as UiKey)}</td>
                  <td>{row.reason ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}
