// Webhooks: the account's receivers (GET/POST /api/v1/webhooks) and one receiver's page
// (/webhooks/:id): its settings, the secret (shown once, after creation or rotation, and only kept
// in this page's memory), enabling it again after an automatic disable, the test button, deleting
// it, and the delivery log with cursor paging.
import { useLocation, useRoute } from 'preact-iso';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, call, load, reachableSubdomains, type paths, type Schemas } from '../api/client.js';
import { formatDateTime, formatNumber } from '../app/format.js';
import { useI18n, type UiKey } from '../app/i18n.js';
import {
  Async,
  CopyButton,
  Empty,
  ErrorState,
  Field,
  fieldError,
  Loading,
  MetaPager,
  Notice,
  PageHeader,
  useCursorPages,
  useLoad,
  useModalDialog,
} from '../app/ui.js';
import './webhooks.css';

type Webhook = Schemas['Webhook'];
type Delivery = Schemas['WebhookDelivery'];
type TestDelivery = Schemas['WebhookTestDelivery'];
type EventName = NonNullable<paths['/api/v1/webhooks']['post']['requestBody']>['content']['application/json']['events'][number];

/**
 * The events a webhook can subscribe to, in the order shown, with whether the platform emits them
 * yet. The names come from the API's own enum (the generated types): an event the API adds and
 * this list lacks fails the build below. `webhook.test` is not offered: the test button sends it
 * whatever the subscription.
 */
const EVENTS = [
  { name: 'visit.new', emitted: true },
  { name: 'visit.unique', emitted: true },
  { name: 'link.created', emitted: true },
  { name: 'link.limit_reached', emitted: true },
  { name: 'security.suspicious', emitted: true },
  { name: 'link.target_down', emitted: false },
  { name: 'agent.task', emitted: false },
] as const satisfies readonly { name: Exclude<EventName, 'webhook.test'>; emitted: boolean }[];
type Listed = (typeof EVENTS)[number]['name'] | 'webhook.test';
const everyEventListed: [Exclude<EventName, Listed>] extends [never] ? true : never = true;
void everyEventListed;

const EVENT_LABELS: Record<(typeof EVENTS)[number]['name'], UiKey> = {
  'visit.new': 'webhooks.event.visit_new',
  'visit.unique': 'webhooks.event.visit_unique',
  'link.created': 'webhooks.event.link_created',
  'link.limit_reached': 'webhooks.event.link_limit_reached',
  'security.suspicious': 'webhooks.event.security_suspicious',
  'link.target_down': 'webhooks.event.link_target_down',
  'agent.task': 'webhooks.event.agent_task',
};

/** Characters of a response excerpt shown in the table; the whole excerpt opens below it. */
const EXCERPT_PREVIEW = 60;
const LOG_PAGE_SIZE = 20;

/** The error of a field: the validation rule, or the message of a refusal naming the field (404/403 of a subdomain). */
function errorOf(error: unknown, field: string): string | undefined {
  const rule = fieldError(error, field);
  if (rule) return rule;
  if (error instanceof ApiError && error.code !== 'validation_error' && field in error.details) return error.message;
  return undefined;
}

/** Whether an error belongs to one of the form's fields (shown there) rather than above the form. */
const onAField = (error: unknown, fields: string[]) =>
  fields.some(
    (field) => errorOf(error, field) !== undefined || (error instanceof ApiError && Object.keys(error.details).some((key) => key.startsWith(`${field}.`))),
  );

interface Settings {
  url: string;
  events: EventName[];
  subdomain: string;
  description: string;
}

/** The form of a webhook's settings, for creating one and for editing one. */
function SettingsForm({
  initial,
  submitLabel,
  busyLabel,
  onSubmit,
  idPrefix,
}: {
  initial: Settings;
  submitLabel: string;
  busyLabel: string;
  idPrefix: string;
  onSubmit: (settings: Settings) => Promise<void>;
}) {
  const { t } = useI18n();
  const [settings, setSettings] = useState<Settings>(initial);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const subdomains = useLoad((signal) => reachableSubdomains(signal, 'admin'), []);
  const set = (changes: Partial<Settings>) => setSettings((current) => ({ ...current, ...changes }));
  const toggle = (name: EventName, on: boolean) => set({ events: on ? [...settings.events, name] : settings.events.filter((event) => event !== name) });

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await onSubmit(settings);
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  const eventsError =
    errorOf(error, 'events') ?? (error instanceof ApiError ? Object.entries(error.details).find(([key]) => key.startsWith('events.'))?.[1] : undefined);
  return (
    <form onSubmit={submit} noValidate>
      <Field id={`${idPrefix}-url`} label={t('webhooks.url')} hint={t('webhooks.url_hint')} error={errorOf(error, 'url')}>
        <input
          id={`${idPrefix}-url`}
          type="url"
          inputMode="url"
          required
          value={settings.url}
          placeholder="https://hooks.example.com/linktrack"
          aria-describedby={`${idPrefix}-url-hint${errorOf(error, 'url') ? ` ${idPrefix}-url-error` : ''}`}
          aria-invalid={errorOf(error, 'url') ? true : undefined}
          onInput={(event) => set({ url: event.currentTarget.value })}
        />
      </Field>
      <fieldset aria-describedby={eventsError ? `${idPrefix}-events-error` : undefined}>
        <legend>{t('webhooks.events')}</legend>
        {EVENTS.map((entry) => (
          <div class="checkbox" key={entry.name}>
            <input
              id={`${idPrefix}-event-${entry.name}`}
              type="checkbox"
              checked={settings.events.includes(entry.name)}
              onChange={(event) => toggle(entry.name, event.currentTarget.checked)}
            />
            <label for={`${idPrefix}-event-${entry.name}`}>
              <code>{entry.name}</code> — {t(EVENT_LABELS[entry.name])}
              {entry.emitted ? null : <span class="webhook-not-emitted"> {t('webhooks.not_emitted')}</span>}
            </label>
          </div>
        ))}
        {eventsError ? (
          <small class="field-error" id={`${idPrefix}-events-error`} role="alert">
            {settings.events.length === 0 ? t('webhooks.events_required') : String(eventsError)}
          </small>
        ) : null}
      </fieldset>
      <div class="form-grid">
        <Field id={`${idPrefix}-subdomain`} label={t('webhooks.subdomain')} hint={t('webhooks.subdomain_hint')} error={errorOf(error, 'subdomain')}>
          <select
            id={`${idPrefix}-subdomain`}
            value={settings.subdomain}
            aria-describedby={`${idPrefix}-subdomain-hint`}
            onChange={(event) => set({ subdomain: event.currentTarget.value })}
          >
            <option value="">{t('webhooks.all_subdomains')}</option>
            {subdomains.state === 'ready'
              ? subdomains.data.subdomains.map((subdomain) => (
                  <option key={subdomain.name} value={subdomain.name}>
                    {subdomain.name}
                  </option>
                ))
              : null}
            {settings.subdomain && subdomains.state === 'ready' && !subdomains.data.subdomains.some((subdomain) => subdomain.name === settings.subdomain) ? (
              <option value={settings.subdomain}>{settings.subdomain}</option>
            ) : null}
          </select>
        </Field>
        <Field id={`${idPrefix}-description`} label={`${t('webhooks.description')} (${t('field.optional')})`} error={errorOf(error, 'description')}>
          <input
            id={`${idPrefix}-description`}
            type="text"
            maxLength={500}
            value={settings.description}
            onInput={(event) => set({ description: event.currentTarget.value })}
          />
        </Field>
      </div>
      {error && !onAField(error, ['url', 'events', 'subdomain', 'description']) ? (
        <Notice kind="error">{error instanceof Error ? error.message : String(error)}</Notice>
      ) : null}
      <div class="form-actions">
        <button type="submit" class="button-primary" disabled={busy}>
          {busy ? busyLabel : submitLabel}
        </button>
      </div>
    </form>
  );
}

/** A secret shown this once, with a copy button. */
function SecretPanel({ secret, intro }: { secret: string; intro: string }) {
  return (
    <div class="secret" role="status">
      <p class="secret-intro">{intro}</p>
      <code class="secret-value">{secret}</code>
      <CopyButton text={secret} />
    </div>
  );
}

/** Enabled, or disabled (by its owner, or automatically after failures). */
function StatusText({ webhook }: { webhook: Webhook }) {
  const { t } = useI18n();
  return webhook.enabled ? <span class="status status-ok">{t('webhooks.enabled')}</span> : <span class="status status-off">{t('webhooks.disabled')}</span>;
}

function WebhookList() {
  const { t, locale } = useI18n();
  const loaded = useLoad((signal) => load(api.GET('/api/v1/webhooks', { params: { query: { limit: 200 } }, signal })), []);
  const [created, setCreated] = useState<Webhook & { secret: string }>();
  const [formKey, setFormKey] = useState(0);
  const createdPanel = useRef<HTMLElement>(null);
  // The secret appears above the list: take the reader there (focus announces it too).
  useEffect(() => {
    if (created) createdPanel.current?.focus();
  }, [created]);

  const create = async (settings: Settings) => {
    const webhook = await load(
      api.POST('/api/v1/webhooks', {
        body: { url: settings.url.trim(), events: settings.events, subdomain: settings.subdomain || null, description: settings.description.trim() || null },
      }),
    );
    setCreated(webhook);
    setFormKey((key) => key + 1);
    loaded.reload();
  };

  return (
    <>
      <PageHeader title={t('webhooks.title')} />
      <p class="muted page-intro">{t('webhooks.intro')}</p>
      {created ? (
        <section class="card webhook-created" aria-labelledby="webhook-created" tabIndex={-1} ref={createdPanel}>
          <h2 id="webhook-created">{t('webhooks.created', { url: created.url })}</h2>
          <SecretPanel secret={created.secret} intro={t('webhooks.secret_once')} />
          <a href={`/webhooks/${created.id}`}>{t('webhooks.open', { url: created.url })}</a>
        </section>
      ) : null}
      {loaded.state === 'error' ? (
        <ErrorState error={loaded.error} retry={loaded.reload} />
      ) : (
        <>
          <section aria-labelledby="webhooks-list" class="webhooks-list">
            <h2 id="webhooks-list">{t('webhooks.list')}</h2>
            <Async loaded={loaded}>
              {({ webhooks }) =>
                webhooks.length === 0 ? (
                  <Empty>
                    <p>{t('webhooks.empty')}</p>
                  </Empty>
                ) : (
                  <div class="table-wrap" tabIndex={0} role="region" aria-label={t('webhooks.list')}>
                    <table class="webhooks-table">
                      <caption class="visually-hidden">{t('webhooks.list')}</caption>
                      <thead>
                        <tr>
                          <th scope="col">{t('webhooks.url')}</th>
                          <th scope="col">{t('webhooks.events')}</th>
                          <th scope="col">{t('webhooks.subdomain')}</th>
                          <th scope="col">{t('webhooks.status')}</th>
                          <th scope="col">{t('webhooks.created_at')}</th>
                        </tr>
                      </thead>
                      <tbody>
                        {webhooks.map((webhook) => (
                          <tr key={webhook.id}>
                            <td class="wrap">
                              <a href={`/webhooks/${webhook.id}`}>{webhook.url}</a>
                              {webhook.description ? <div class="muted">{webhook.description}</div> : null}
                            </td>
                            <td>
                              <ul class="event-names">
                                {webhook.events.map((event) => (
                                  <li key={event} class="mono">
                                    {event}
                                  </li>
                                ))}
                              </ul>
                            </td>
                            <td>{webhook.subdomain ?? <span class="muted">{t('webhooks.all_subdomains')}</span>}</td>
                            <td>
                              <StatusText webhook={webhook} />
                            </td>
                            <td>{formatDateTime(locale, webhook.created_at)}</td>
                          </tr>
                        ))}
                      </tbody>
                    </table>
                  </div>
                )
              }
            </Async>
          </section>
          <section class="card" aria-labelledby="webhooks-create">
            <h2 id="webhooks-create">{t('webhooks.create')}</h2>
            <SettingsForm
              key={formKey}
              idPrefix="new-webhook"
              initial={{ url: '', events: ['visit.new'], subdomain: '', description: '' }}
              submitLabel={t('webhooks.create_submit')}
              busyLabel={t('action.saving')}
              onSubmit={create}
            />
          </section>
        </>
      )}
    </>
  );
}

/** A modal confirmation (`<dialog>.showModal()` traps the focus and closes on Escape). */
function ConfirmDialog({
  id,
  open,
  title,
  message,
  confirmLabel,
  danger,
  busy,
  error,
  onConfirm,
  onClose,
}: {
  id: string;
  open: boolean;
  title: string;
  message: string;
  confirmLabel: string;
  danger?: boolean;
  busy: boolean;
  error?: string;
  onConfirm: () => void;
  onClose: () => void;
}) {
  const { t } = useI18n();
  const dialog = useModalDialog(open, onClose);
  return (
    <dialog {...dialog} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{title}</h2>
      <p>{message}</p>
      {error ? <Notice kind="error">{error}</Notice> : null}
      <div class="form-actions">
        <button type="button" class={danger ? 'button-danger' : 'button-primary'} disabled={busy} onClick={onConfirm}>
          {confirmLabel}
        </button>
        <button type="button" onClick={onClose} autofocus>
          {t('action.cancel')}
        </button>
      </div>
    </dialog>
  );
}

/** The outcome of the test button, as the API answered it. */
function TestResult({ result }: { result: TestDelivery }) {
  const { t, locale } = useI18n();
  const figures = { status: result.status_code ?? '—', latency: formatNumber(locale, result.latency_ms) };
  return (
    <Notice kind={result.success ? 'ok' : 'error'}>
      {result.success ? t('webhooks.test_ok', figures) : t('webhooks.test_failed', figures)}
      {result.error ? ` ${result.error}` : ''}
    </Notice>
  );
}

/** A response excerpt as text: the start in the cell, the whole excerpt (at most 1024 characters) in a disclosure. */
function Excerpt({ text }: { text: string | null }) {
  const { t } = useI18n();
  if (!text) return <span class="muted">—</span>;
  if (text.length <= EXCERPT_PREVIEW) return <span class="mono excerpt">{text}</span>;
  return (
    <details class="excerpt">
      <summary>
        <span class="mono">{`${text.slice(0, EXCERPT_PREVIEW)}…`}</span>
        <span class="visually-hidden"> {t('webhooks.excerpt_full')}</span>
      </summary>
      <pre class="mono">{text}</pre>
    </details>
  );
}

function DeliveryLog({ webhookId, round }: { webhookId: string; round: number }) {
  const { t, locale } = useI18n();
  // A new attempt (the test button) shows on the first page: go back there.
  const pages = useCursorPages([round]);
  const { cursor } = pages;
  const loaded = useLoad(
    (signal) =>
      call(
        api.GET('/api/v1/webhooks/{id}/deliveries', {
          params: { path: { id: webhookId }, query: { limit: LOG_PAGE_SIZE, ...(cursor ? { cursor } : {}) } },
          signal,
        }),
      ),
    [webhookId, cursor, round],
  );
  return (
    <section aria-labelledby="delivery-log">
      <div class="section-header">
        <h2 id="delivery-log">{t('webhooks.log')}</h2>
        <button type="button" class="button-small" onClick={loaded.reload}>
          {t('webhooks.log_refresh')}
        </button>
      </div>
      <Async loaded={loaded}>
        {({ data, meta }) =>
          data.deliveries.length === 0 ? (
            <Empty>
              <p>{t('webhooks.log_empty')}</p>
            </Empty>
          ) : (
            <>
              <div class="table-wrap" tabIndex={0} role="region" aria-label={t('webhooks.log')}>
                <table class="delivery-log">
                  <caption class="visually-hidden">{t('webhooks.log')}</caption>
                  <thead>
                    <tr>
                      <th scope="col">{t('webhooks.log_time')}</th>
                      <th scope="col">{t('webhooks.log_event')}</th>
                      <th scope="col" class="num">
                        {t('webhooks.log_status')}
                      </th>
                      <th scope="col" class="num">
                        {t('webhooks.log_latency')}
                      </th>
                      <th scope="col" class="num">
                        {t('webhooks.log_attempt')}
                      </th>
                      <th scope="col">{t('webhooks.log_result')}</th>
                      <th scope="col">{t('webhooks.log_excerpt')}</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.deliveries.map((delivery: Delivery) => (
                      <tr key={delivery.id} class={delivery.success ? 'delivery-ok' : 'delivery-failed'}>
                        <td class="nowrap">{formatDateTime(locale, delivery.attempted_at, true)}</td>
                        <td class="mono">{delivery.event}</td>
                        <td class="num">{delivery.status_code ?? '—'}</td>
                        <td class="num">{t('webhooks.ms', { ms: formatNumber(locale, delivery.latency_ms) })}</td>
                        <td class="num">{delivery.attempt}</td>
                        <td class="wrap">
                          {delivery.success ? (
                            <span class="status status-ok">{t('webhooks.log_success')}</span>
                          ) : (
                            <span class="status status-off">{t('webhooks.log_failure')}</span>
                          )}
                          {delivery.error ? <div class="muted">{delivery.error}</div> : null}
                        </td>
                        <td class="wrap">
                          <Excerpt text={delivery.response_excerpt} />
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
              <MetaPager pages={pages} meta={meta} />
            </>
          )
        }
      </Async>
    </section>
  );
}

type Pending = 'test' | 'enable' | 'pause' | 'rotate' | 'delete';

function WebhookDetail({ id }: { id: string }) {
  const { t, locale } = useI18n();
  const { route } = useLocation();
  const loaded = useLoad((signal) => load(api.GET('/api/v1/webhooks/{id}', { params: { path: { id } }, signal })), [id]);
  const [webhook, setWebhook] = useState<Webhook>();
  const [secret, setSecret] = useState<string>();
  const [testResult, setTestResult] = useState<TestDelivery>();
  const [pending, setPending] = useState<Pending>();
  const [actionError, setActionError] = useState<string>();
  const [confirm, setConfirm] = useState<'rotate' | 'delete'>();
  const [saved, setSaved] = useState(false);
  const [logRound, setLogRound] = useState(0);
  const fetched = loaded.state === 'ready' ? loaded.data : undefined;
  // The loaded webhook, then each action's answer (enable, rotate, save) in its place.
  useEffect(() => {
    if (fetched) setWebhook(fetched);
  }, [fetched]);

  const act = async (kind: Pending, action: () => Promise<void>) => {
    setPending(kind);
    setActionError(undefined);
    setSaved(false);
    try {
      await action();
    } catch (caught) {
      setActionError(caught instanceof Error ? caught.message : String(caught));
    } finally {
      setPending(undefined);
    }
  };
  const path = { params: { path: { id } } };
  const test = () =>
    act('test', async () => {
      setTestResult(undefined);
      setTestResult(await load(api.POST('/api/v1/webhooks/{id}/test', path)));
      setLogRound((round) => round + 1);
    });
  const enable = () => act('enable', async () => setWebhook(await load(api.POST('/api/v1/webhooks/{id}/enable', path))));
  const pause = () => act('pause', async () => setWebhook(await load(api.PATCH('/api/v1/webhooks/{id}', { ...path, body: { enabled: false } }))));
  const rotate = () =>
    act('rotate', async () => {
      const rotated = await load(api.POST('/api/v1/webhooks/{id}/rotate-secret', path));
      setSecret(rotated.secret);
      setWebhook(rotated);
      setConfirm(undefined);
    });
  const remove = () =>
    act('delete', async () => {
      await load(api.DELETE('/api/v1/webhooks/{id}', path));
      setConfirm(undefined);
      route('/webhooks');
    });
  const save = async (settings: Settings) => {
    setSaved(false);
    const updated = await load(
      api.PATCH('/api/v1/webhooks/{id}', {
        ...path,
        body: { url: settings.url.trim(), events: settings.events, subdomain: settings.subdomain || null, description: settings.description.trim() || null },
      }),
    );
    setWebhook(updated);
    setSaved(true);
  };

  if (loaded.state === 'loading' || (loaded.state === 'ready' && !webhook)) return <Loading />;
  if (loaded.state === 'error')
    return (
      <>
        <PageHeader title={t('webhooks.title')} />
        <ErrorState error={loaded.error} retry={loaded.reload} />
        <p>
          <a href="/webhooks">{t('webhooks.back')}</a>
        </p>
      </>
    );
  const current = webhook!;
  return (
    <>
      <p class="breadcrumb">
        <a href="/webhooks">{t('webhooks.back')}</a>
      </p>
      <PageHeader title={t('webhooks.detail_title')}>
        <button type="button" onClick={test} disabled={pending !== undefined}>
          {pending === 'test' ? t('webhooks.testing') : t('webhooks.test')}
        </button>
        <button type="button" onClick={() => setConfirm('rotate')} disabled={pending !== undefined}>
          {t('webhooks.rotate')}
        </button>
        <button type="button" class="button-danger" onClick={() => setConfirm('delete')} disabled={pending !== undefined}>
          {t('action.delete')}
        </button>
      </PageHeader>
      <section class="card" aria-labelledby="webhook-summary">
        <h2 id="webhook-summary" class="webhook-url">
          {current.url}
        </h2>
        <dl class="webhook-facts">
          <div>
            <dt>{t('webhooks.status')}</dt>
            <dd>
              <StatusText webhook={current} />
            </dd>
          </div>
          <div>
            <dt>{t('webhooks.secret')}</dt>
            <dd class="mono">{t('webhooks.secret_prefix', { prefix: current.secret_prefix })}</dd>
          </div>
          <div>
            <dt>{t('webhooks.created_at')}</dt>
            <dd>{formatDateTime(locale, current.created_at)}</dd>
          </div>
        </dl>
        {current.enabled ? (
          <button type="button" class="button-small" onClick={pause} disabled={pending !== undefined}>
            {t('webhooks.pause')}
          </button>
        ) : (
          <div class="webhook-disabled" role="status">
            <p>
              <strong>{t('webhooks.disabled_since', { time: formatDateTime(locale, current.disabled_at) })}</strong>
            </p>
            {current.disabled_reason ? <p>{t('webhooks.disabled_reason', { reason: current.disabled_reason })}</p> : null}
            <p class="muted">{t('webhooks.enable_hint')}</p>
            <button type="button" class="button-primary" onClick={enable} disabled={pending !== undefined}>
              {pending === 'enable' ? t('webhooks.enabling') : t('webhooks.enable')}
            </button>
          </div>
        )}
        {secret ? <SecretPanel secret={secret} intro={t('webhooks.secret_rotated')} /> : null}
        {testResult ? <TestResult result={testResult} /> : null}
        {actionError && confirm === undefined ? <Notice kind="error">{actionError}</Notice> : null}
      </section>
      <DeliveryLog webhookId={id} round={logRound} />
      <section class="card" aria-labelledby="webhook-settings">
        <h2 id="webhook-settings">{t('webhooks.settings')}</h2>
        <SettingsForm
          key={current.updated_at}
          idPrefix="webhook"
          initial={{ url: current.url, events: current.events as EventName[], subdomain: current.subdomain ?? '', description: current.description ?? '' }}
          submitLabel={t('action.save')}
          busyLabel={t('action.saving')}
          onSubmit={save}
        />
        {saved ? <Notice kind="ok">{t('action.saved')}</Notice> : null}
      </section>
      <ConfirmDialog
        id="rotate-dialog"
        open={confirm === 'rotate'}
        title={t('webhooks.rotate_title')}
        message={t('webhooks.rotate_confirm')}
        confirmLabel={t('webhooks.rotate')}
        busy={pending === 'rotate'}
        error={confirm === 'rotate' ? actionError : undefined}
        onConfirm={rotate}
        onClose={() => setConfirm(undefined)}
      />
      <ConfirmDialog
        id="delete-dialog"
        open={confirm === 'delete'}
        title={t('webhooks.delete_title')}
        message={t('action.confirm_delete', { name: current.url })}
        confirmLabel={t('action.delete')}
        danger
        busy={pending === 'delete'}
        error={confirm === 'delete' ? actionError : undefined}
        onConfirm={remove}
        onClose={() => setConfirm(undefined)}
      />
    </>
  );
}

export function WebhooksPage() {
  const { params } = useRoute();
  return params.id ? <WebhookDetail key={params.id} id={params.id} /> : <WebhookList />;
}
