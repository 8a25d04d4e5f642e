// Subdomains: the owner's list with claiming a new one (/subdomains), and one subdomain's title,
// eleven privacy-policy fields and tracker origins in one form (/subdomains/:name) beside a live
// "what the public sees". The preview of unsaved changes runs the server's own policy code (shared/policy/view.ts,
// pure and browser-safe), and the public payload as served (GET /api/v1/subdomains/{name}, the
// same request an anonymous reader makes) is shown below it after each save.
import { useRoute } from 'preact-iso';
import { useMemo, useState } from 'preact/hooks';
import {
  MAX_PUBLIC_ITEMS,
  MAX_PUBLISH_DELAY_SEC,
  POLICY_SWITCHES,
  publicSummary,
  publicView,
  type Policy,
  type PolicySwitch,
  type PublicSummary,
} from '#shared/policy/view.js';
import { api, ApiError, load, type Schemas } from '../api/client.js';
import { formatDate, formatNumber } from '../app/format.js';
import { useI18n, type Translate, type UiKey, type UiLocale } from '../app/i18n.js';
import { Async, CopyButton, Empty, ErrorState, Field, fieldError, Loading, Notice, PageHeader, useLoad, type Loaded } from '../app/ui.js';
import { originsError, originsOf, originsText, sameOrigins, TrackerOriginsField } from './subdomains-tracker.js';
import { SubdomainDomains } from './subdomains-domains.js';
import { SubdomainQrLogo } from './subdomains-qr-logo.js';
import { passesTeamFilter, SubdomainTeam, TeamFilter, type TeamFilterValue } from './subdomains-team.js';
import './subdomains.css';

type Subdomain = Schemas['Subdomain'];
type Team = Schemas['Team'];
type PublicPage = Schemas['PublicPage'];

/** An account's most subdomains (the API's MAX_SUBDOMAINS_PER_OWNER; the list's meta.limit says it too). */
const MAX_SUBDOMAINS = 50;
const TITLE_MAX = 200;

export function SubdomainsPage() {
  const { params } = useRoute();
  return params.name ? <SubdomainSettings key={params.name} name={params.name} /> : <SubdomainList />;
}

const settingsHref = (name: string) => `/subdomains/${encodeURIComponent(name)}`;
const statsHref = (name: string) => `/stats/subdomain/${encodeURIComponent(name)}`;
/** The public page is the root of the subdomain's own host; `url` is that origin. */
const publicPageHref = (url: string) => (url.endsWith('/') ? url : `${url}/`);

/** A claim refusal said on the name field, in the viewer's language where the rule is known. */
function claimNameError(t: Translate, error: unknown): string | undefined {
  if (!(error instanceof ApiError)) return undefined;
  const rule = typeof error.details.name === 'string' ? error.details.name : undefined;
  if (error.code === 'conflict') return error.details.name === 'is reserved' ? t('subdomains.error.reserved') : t('subdomains.error.taken');
  if (error.code === 'forbidden' && error.details.reason === 'limit_reached') return t('subdomains.error.limit', { max: MAX_SUBDOMAINS });
  if (error.code !== 'validation_error' || rule === undefined) return undefined;
  if (rule.startsWith('must not have "--"')) return t('subdomains.error.punycode');
  if (rule.startsWith('must be a DNS label')) return t('subdomains.error.invalid');
  return rule;
}

function ClaimForm({ count, onClaimed }: { count: number; onClaimed: (subdomain: Subdomain) => void }) {
  const { t } = useI18n();
  const [name, setName] = useState('');
  const [title, setTitle] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [claimed, setClaimed] = useState<string>();

  const submit = async (event: Event) => {
    event.preventDefault();
    if (busy) return;
    setBusy(true);
    setError(undefined);
    setClaimed(undefined);
    try {
      const trimmed = title.trim();
      const subdomain = await load(api.POST('/api/v1/subdomains', { body: { name: name.trim(), ...(trimmed ? { title: trimmed } : {}) } }));
      setClaimed(subdomain.name);
      setName('');
      setTitle('');
      onClaimed(subdomain);
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };

  const nameError = claimNameError(t, error);
  const titleError = fieldError(error, 'title') ? t('subdomains.error.title') : undefined;
  // Anything not said on a field (network, rate limit, …) is said under the form.
  const formError = error && !nameError && !titleError ? error : undefined;
  const describedBy = (id: string, hasError: boolean) => [`${id}-hint`, hasError ? `${id}-error` : ''].filter(Boolean).join(' ');

  return (
    <section class="card" aria-labelledby="claim-heading">
      <h2 id="claim-heading">{t('subdomains.claim.heading')}</h2>
      <form class="claim-form" onSubmit={submit}>
        <div class="form-grid">
          <Field id="claim-name" label={t('subdomains.claim.name')} hint={t('subdomains.claim.name_hint', { max: MAX_SUBDOMAINS })} error={nameError}>
            <input
              id="claim-name"
              name="name"
              required
              minLength={3}
              maxLength={63}
              autocomplete="off"
              autocapitalize="off"
              spellcheck={false}
              value={name}
              aria-invalid={nameError ? 'true' : undefined}
              aria-describedby={describedBy('claim-name', Boolean(nameError))}
              onInput={(event) => setName(event.currentTarget.value.toLowerCase())}
            />
          </Field>
          <Field id="claim-title" label={t('subdomains.claim.title')} hint={t('subdomains.claim.title_hint')} error={titleError}>
            <input
              id="claim-title"
              name="title"
              maxLength={TITLE_MAX}
              value={title}
              aria-invalid={titleError ? 'true' : undefined}
              aria-describedby={describedBy('claim-title', Boolean(titleError))}
              onInput={(event) => setTitle(event.currentTarget.value)}
            />
          </Field>
        </div>
        {formError ? <ErrorState error={formError instanceof Error ? formError : new Error(String(formError))} /> : null}
        {claimed ? (
          <Notice kind="ok">
            {t('subdomains.claim.done', { name: claimed })} <a href={settingsHref(claimed)}>{t('subdomains.claim.open')}</a>
          </Notice>
        ) : null}
        <div class="form-actions">
          <button type="submit" class="button-primary" disabled={busy || count >= MAX_SUBDOMAINS}>
            {busy ? t('subdomains.claim.submitting') : t('subdomains.claim.submit')}
          </button>
          {count >= MAX_SUBDOMAINS ? <span class="muted">{t('subdomains.error.limit', { max: MAX_SUBDOMAINS })}</span> : null}
        </div>
      </form>
    </section>
  );
}

function SubdomainCard({ subdomain, teams, onChanged }: { subdomain: Subdomain; teams: Team[] | undefined; onChanged: () => void }) {
  const { t, locale } = useI18n();
  const { name } = subdomain;
  return (
    <li class="card subdomain-card" data-subdomain={name}>
      <div class="subdomain-card-head">
        <h3>
          <a href={settingsHref(name)} aria-label={t('subdomains.list.settings_of', { name })}>
            {name}
          </a>
        </h3>
        <span class={`pill ${subdomain.stats_public ? 'pill-on' : 'pill-off'}`}>
          {subdomain.stats_public ? t('subdomains.list.public') : t('subdomains.list.private')}
        </span>
      </div>
      <p class={subdomain.title ? 'subdomain-title' : 'subdomain-title muted'}>{subdomain.title ?? t('subdomains.list.no_title')}</p>
      <dl class="subdomain-facts">
        <div>
          <dt>{t('subdomains.list.links')}</dt>
          <dd data-testid="links-count">{formatNumber(locale, subdomain.links_count)}</dd>
        </div>
        <div>
          <dt>{t('subdomains.list.claimed')}</dt>
          <dd>{formatDate(locale, subdomain.created_at)}</dd>
        </div>
        <div class="subdomain-origin">
          <dt>{t('subdomains.list.origin')}</dt>
          <dd>
            <code class="mono">{subdomain.url}</code>
            <CopyButton text={subdomain.url} label={t('subdomains.list.copy_origin', { name })} />
          </dd>
        </div>
      </dl>
      {teams ? <SubdomainTeam name={name} teamId={subdomain.team_id} teams={teams} onChanged={onChanged} /> : null}
      <p class="row-actions">
        <a class="button button-small" href={settingsHref(name)} aria-label={t('subdomains.list.settings_of', { name })}>
          {t('subdomains.list.settings')}
        </a>
        <a class="button button-small" href={publicPageHref(subdomain.url)} aria-label={t('subdomains.list.public_page_of', { name })}>
          {t('subdomains.list.public_page')}
        </a>
        <a class="button button-small" href={statsHref(name)} aria-label={t('subdomains.list.stats_of', { name })}>
          {t('subdomains.list.stats')}
        </a>
      </p>
    </li>
  );
}

function SubdomainList() {
  const { t } = useI18n();
  const loaded = useLoad((signal) => load(api.GET('/api/v1/subdomains', { params: { query: { limit: 200 } }, signal })), []);
  const count = loaded.state === 'ready' ? loaded.data.subdomains.length : 0;
  // The team switcher needs the caller's teams; without them (a failed load) the list still works.
  const teamsLoaded = useLoad((signal) => load(api.GET('/api/v1/teams', { params: { query: { limit: 200 } }, signal })), []);
  const teams = teamsLoaded.state === 'ready' ? teamsLoaded.data.teams : undefined;
  const [teamFilter, setTeamFilter] = useState<TeamFilterValue>('all');
  return (
    <>
      <PageHeader title={t('subdomains.title')} />
      <p class="muted page-intro">{t('subdomains.intro')}</p>
      <ClaimForm count={count} onClaimed={loaded.reload} />
      <section aria-labelledby="list-heading">
        <div class="section-head">
          <h2 id="list-heading">{t('subdomains.list.heading')}</h2>
          {loaded.state === 'ready' ? <span class="muted">{t('subdomains.list.count', { count, max: MAX_SUBDOMAINS })}</span> : null}
        </div>
        <Async loaded={loaded}>
          {({ subdomains }) =>
            subdomains.length === 0 ? (
              <Empty>
                <p>{t('subdomains.list.empty')}</p>
              </Empty>
            ) : (
              <>
                {teams && teams.length > 0 ? <TeamFilter teams={teams} value={teamFilter} onChange={setTeamFilter} /> : null}
                {subdomains.some((subdomain) => passesTeamFilter(teamFilter, subdomain.team_id)) ? (
                  <ul class="cards subdomain-list">
                    {subdomains
                      .filter((subdomain) => passesTeamFilter(teamFilter, subdomain.team_id))
                      .map((subdomain) => (
                        <SubdomainCard key={subdomain.name} subdomain={subdomain} teams={teams} onChanged={loaded.reload} />
                      ))}
                  </ul>
                ) : (
                  <Empty>
                    <p>{t('teams.sub.filtered_empty')}</p>
                  </Empty>
                )}
              </>
            )
          }
        </Async>
      </section>
    </>
  );
}

// ---- One subdomain's settings ----

type DelayUnit = 'second' | 'minute' | 'hour' | 'day';
const UNITS: { unit: DelayUnit; seconds: number }[] = [
  { unit: 'day', seconds: 86_400 },
  { unit: 'hour', seconds: 3_600 },
  { unit: 'minute', seconds: 60 },
  { unit: 'second', seconds: 1 },
];
const unitSeconds = (unit: DelayUnit) => UNITS.find((entry) => entry.unit === unit)!.seconds;

/** The largest unit that says a delay exactly (3600 → 1 hour, 90 → 90 seconds). */
function splitDelay(seconds: number): { amount: number; unit: DelayUnit } {
  const fit = UNITS.find((entry) => seconds > 0 && seconds % entry.seconds === 0) ?? { unit: 'hour' as const, seconds: 3_600 };
  return { amount: seconds / fit.seconds, unit: fit.unit };
}

/** A delay in words of the viewer's language, e.g. "2 hours", "1 Tag". */
function formatDelay(locale: UiLocale, t: Translate, seconds: number): string {
  if (seconds === 0) return t('subdomains.preview.no_delay');
  const { amount, unit } = splitDelay(seconds);
  return new Intl.NumberFormat(locale, { style: 'unit', unit, unitDisplay: 'long' }).format(amount);
}

const SECTION_SWITCHES: PolicySwitch[] = ['stats_public', 'stats_show_visits_list', 'stats_show_links', 'stats_show_owner'];
const DETAIL_SWITCHES: PolicySwitch[] = [
  'stats_show_ip',
  'stats_show_internal_ip',
  'stats_show_geo',
  'stats_show_ua',
  'stats_show_referrer',
  'stats_show_attack_paths',
];

interface Draft {
  title: string;
  switches: Record<PolicySwitch, boolean>;
  delayAmount: string;
  delayUnit: DelayUnit;
  maxItems: string;
  /** The tracker origins, one per line. */
  origins: string;
  /** The forward_query of links created without one. */
  forwardQuery: boolean;
}

function draftOf(subdomain: Subdomain): Draft {
  const { amount, unit } = splitDelay(subdomain.stats_publish_delay_sec);
  return {
    title: subdomain.title ?? '',
    switches: Object.fromEntries(POLICY_SWITCHES.map((name) => [name, subdomain[name]])) as Record<PolicySwitch, boolean>,
    delayAmount: String(amount),
    delayUnit: unit,
    maxItems: String(subdomain.stats_max_items),
    origins: originsText(subdomain.tracker_origins),
    forwardQuery: subdomain.forward_query,
  };
}

/** The draft as values the API takes, or which fields are not valid yet. */
function readDraft(draft: Draft): { title: string | null; delay: number | undefined; maxItems: number | undefined } {
  const title = draft.title.trim();
  const amount = draft.delayAmount.trim() === '' ? Number.NaN : Number(draft.delayAmount);
  const delay = amount * unitSeconds(draft.delayUnit);
  const maxItems = draft.maxItems.trim() === '' ? Number.NaN : Number(draft.maxItems);
  return {
    title: title === '' ? null : title,
    delay: Number.isInteger(delay) && delay >= 0 && delay <= MAX_PUBLISH_DELAY_SEC ? delay : undefined,
    maxItems: Number.isInteger(maxItems) && maxItems >= 1 && maxItems <= MAX_PUBLIC_ITEMS ? maxItems : undefined,
  };
}

type Patch = { title?: string | null; tracker_origins?: string[]; forward_query?: boolean } & Partial<Policy>;

/** The fields that differ from the saved subdomain: what PATCH sends. */
function changesOf(saved: Subdomain, draft: Draft): Patch {
  const read = readDraft(draft);
  const patch: Patch = {};
  if (read.title !== saved.title && (read.title ?? '').length <= TITLE_MAX) patch.title = read.title;
  for (const name of POLICY_SWITCHES) if (draft.switches[name] !== saved[name]) patch[name] = draft.switches[name];
  if (read.delay !== undefined && read.delay !== saved.stats_publish_delay_sec) patch.stats_publish_delay_sec = read.delay;
  if (read.maxItems !== undefined && read.maxItems !== saved.stats_max_items) patch.stats_max_items = read.maxItems;
  const origins = originsOf(draft.origins);
  if (!sameOrigins(origins, saved.tracker_origins)) patch.tracker_origins = origins;
  if (draft.forwardQuery !== saved.forward_query) patch.forward_query = draft.forwardQuery;
  return patch;
}

function SubdomainSettings({ name }: { name: string }) {
  const { t } = useI18n();
  const loaded = useLoad((signal) => load(api.GET('/api/v1/subdomains/{name}/settings', { params: { path: { name } }, signal })), [name]);
  return (
    <>
      <PageHeader title={t('subdomains.settings.title', { name })}>
        <a class="button" href="/subdomains">
          {t('subdomains.settings.back')}
        </a>
      </PageHeader>
      <Async loaded={loaded}>
        {(subdomain) => (
          <>
            <SettingsForm initial={subdomain} />
            <SubdomainDomains name={subdomain.name} url={subdomain.url} />
            <SubdomainQrLogo name={subdomain.name} />
          </>
        )}
      </Async>
    </>
  );
}

function SwitchBox({ name, checked, onChange }: { name: PolicySwitch; checked: boolean; onChange: (value: boolean) => void }) {
  const { t } = useI18n();
  const id = `policy-${name}`;
  return (
    <div class="checkbox">
      <input
        id={id}
        type="checkbox"
        name={name}
        checked={checked}
        aria-describedby={`${id}-help`}
        onChange={(event) => onChange(event.currentTarget.checked)}
      />
      <div>
        <label for={id}>{t(`subdomains.field.${name}` as UiKey)}</label>
        <small class="checkbox-help muted" id={`${id}-help`}>
          {t(`subdomains.help.${name}` as UiKey)}
        </small>
      </div>
    </div>
  );
}

function SettingsForm({ initial }: { initial: Subdomain }) {
  const { t } = useI18n();
  const [saved, setSaved] = useState(initial);
  const [draft, setDraft] = useState(() => draftOf(initial));
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ kind: 'saved' } | { kind: 'error'; error: unknown }>();
  const [round, setRound] = useState(0);
  const name = saved.name;

  const served = useLoad((signal) => load(api.GET('/api/v1/subdomains/{name}', { params: { path: { name } }, signal })), [name, round]);

  const read = readDraft(draft);
  const changes = useMemo(() => changesOf(saved, draft), [saved, draft]);
  const changed = Object.keys(changes).length;
  const error = result?.kind === 'error' ? result.error : undefined;
  const titleError =
    read.title !== null && read.title.length > TITLE_MAX ? t('subdomains.error.title') : fieldError(error, 'title') ? t('subdomains.error.title') : undefined;
  const delayError = read.delay === undefined || fieldError(error, 'stats_publish_delay_sec') ? t('subdomains.error.delay') : undefined;
  const maxItemsError = read.maxItems === undefined || fieldError(error, 'stats_max_items') ? t('subdomains.error.max_items') : undefined;
  const trackerError = originsError(t, error, originsOf(draft.origins));
  const invalid = Boolean(titleError || read.delay === undefined || read.maxItems === undefined);

  // What the public would see with the draft: the saved value stands in for a field not valid yet.
  const draftPolicy: Policy = {
    ...draft.switches,
    stats_publish_delay_sec: read.delay ?? saved.stats_publish_delay_sec,
    stats_max_items: read.maxItems ?? saved.stats_max_items,
  };
  const view = publicView(draftPolicy);
  const preview = publicSummary(view);
  const previewTitle = read.title;

  const update = (next: Partial<Draft>) => {
    setDraft((current) => ({ ...current, ...next }));
    if (result?.kind === 'saved') setResult(undefined);
  };

  const submit = async (event: Event) => {
    event.preventDefault();
    if (busy || invalid || changed === 0) return;
    setBusy(true);
    setResult(undefined);
    try {
      const updated = await load(api.PATCH('/api/v1/subdomains/{name}', { params: { path: { name } }, body: changes }));
      setSaved(updated);
      setDraft(draftOf(updated));
      setResult({ kind: 'saved' });
      setRound((value) => value + 1);
    } catch (caught) {
      setResult({ kind: 'error', error: caught });
    } finally {
      setBusy(false);
    }
  };

  const describedBy = (id: string, hasError: boolean) => [`${id}-hint`, hasError ? `${id}-error` : ''].filter(Boolean).join(' ');
  // A refusal the API pinned on a field is said there; any other under the form.
  const fieldMessage =
    ['title', 'stats_publish_delay_sec', 'stats_max_items'].some((field) => fieldError(error, field) !== undefined) || trackerError !== undefined;

  return (
    <div class="subdomain-settings">
      <section class="card settings-form" aria-labelledby="settings-form-heading">
        <h2 id="settings-form-heading">{t('subdomains.settings.form')}</h2>
        <p class="row-actions subdomain-links">
          <code class="mono">{saved.url}</code>
          <a href={publicPageHref(saved.url)}>{t('subdomains.list.public_page')}</a>
          <a href={statsHref(name)}>{t('subdomains.list.stats')}</a>
        </p>
        <form onSubmit={submit}>
          <Field id="settings-title" label={t('subdomains.settings.title_label')} hint={t('subdomains.settings.title_hint')} error={titleError}>
            <input
              id="settings-title"
              name="title"
              value={draft.title}
              aria-invalid={titleError ? 'true' : undefined}
              aria-describedby={describedBy('settings-title', Boolean(titleError))}
              onInput={(event) => update({ title: event.currentTarget.value })}
            />
          </Field>
          <fieldset>
            <legend>{t('subdomains.settings.group_sections')}</legend>
            {SECTION_SWITCHES.map((field) => (
              <SwitchBox
                key={field}
                name={field}
                checked={draft.switches[field]}
                onChange={(value) => update({ switches: { ...draft.switches, [field]: value } })}
              />
            ))}
          </fieldset>
          <fieldset>
            <legend>{t('subdomains.settings.group_details')}</legend>
            {DETAIL_SWITCHES.map((field) => (
              <SwitchBox
                key={field}
                name={field}
                checked={draft.switches[field]}
                onChange={(value) => update({ switches: { ...draft.switches, [field]: value } })}
              />
            ))}
          </fieldset>
          <fieldset>
            <legend>{t('subdomains.settings.group_limits')}</legend>
            <Field
              id="settings-delay"
              label={t('subdomains.field.stats_publish_delay_sec')}
              hint={t('subdomains.help.stats_publish_delay_sec')}
              error={delayError}
            >
              <div class="delay-input">
                <input
                  id="settings-delay"
                  name="stats_publish_delay_amount"
                  type="number"
                  inputMode="decimal"
                  min={0}
                  step="any"
                  value={draft.delayAmount}
                  aria-invalid={delayError ? 'true' : undefined}
                  aria-describedby={describedBy('settings-delay', Boolean(delayError))}
                  onInput={(event) => update({ delayAmount: event.currentTarget.value })}
                />
                <select
                  name="stats_publish_delay_unit"
                  aria-label={t('subdomains.field.delay_unit')}
                  value={draft.delayUnit}
                  onChange={(event) => update({ delayUnit: event.currentTarget.value as DelayUnit })}
                >
                  {[...UNITS].reverse().map(({ unit }) => (
                    <option key={unit} value={unit}>
                      {t(`subdomains.unit.${unit}`)}
                    </option>
                  ))}
                </select>
              </div>
            </Field>
            <Field id="settings-max-items" label={t('subdomains.field.stats_max_items')} hint={t('subdomains.help.stats_max_items')} error={maxItemsError}>
              <input
                id="settings-max-items"
                name="stats_max_items"
                type="number"
                inputMode="numeric"
                min={1}
                max={MAX_PUBLIC_ITEMS}
                step={1}
                value={draft.maxItems}
                aria-invalid={maxItemsError ? 'true' : undefined}
                aria-describedby={describedBy('settings-max-items', Boolean(maxItemsError))}
                onInput={(event) => update({ maxItems: event.currentTarget.value })}
              />
            </Field>
          </fieldset>
          <fieldset>
            <legend>{t('subdomains.settings.group_links')}</legend>
            <div class="checkbox">
              <input
                id="settings-forward-query"
                type="checkbox"
                name="forward_query"
                checked={draft.forwardQuery}
                aria-describedby="settings-forward-query-help"
                onChange={(event) => update({ forwardQuery: event.currentTarget.checked })}
              />
              <div>
                <label for="settings-forward-query">{t('subdomains.field.forward_query')}</label>
                <small class="checkbox-help muted" id="settings-forward-query-help">
                  {t('subdomains.help.forward_query')}
                </small>
              </div>
            </div>
          </fieldset>
          <TrackerOriginsField t={t} value={draft.origins} error={trackerError} onInput={(origins) => update({ origins })} />
          {result?.kind === 'saved' ? <Notice kind="ok">{t('subdomains.settings.saved')}</Notice> : null}
          {error && !fieldMessage ? <ErrorState error={error instanceof Error ? error : new Error(String(error))} /> : null}
          <div class="form-actions">
            <button type="submit" class="button-primary" disabled={busy || invalid || changed === 0}>
              {busy ? t('action.saving') : t('action.save')}
            </button>
            <button
              type="button"
              disabled={busy || changed === 0}
              onClick={() => {
                setDraft(draftOf(saved));
                setResult(undefined);
              }}
            >
              {t('subdomains.settings.discard')}
            </button>
            <span class="muted" role="status" aria-live="polite">
              {changed > 0 ? t('subdomains.settings.unsaved', { count: changed }) : t('subdomains.settings.no_changes')}
            </span>
          </div>
        </form>
      </section>
      <aside class="card public-preview" aria-labelledby="preview-heading">
        <h2 id="preview-heading">{t('subdomains.preview.heading')}</h2>
        <p class="muted" data-testid="preview-state">
          {changed > 0 ? t('subdomains.preview.draft') : t('subdomains.preview.current')}
        </p>
        <PublicPreview name={name} title={previewTitle} summary={preview} breakdowns={view.breakdowns} />
        <ServedPayload served={served} preview={preview} />
      </aside>
    </div>
  );
}

function State({ on }: { on: boolean }) {
  const { t } = useI18n();
  return <span class={`pill ${on ? 'pill-on' : 'pill-off'}`}>{on ? t('subdomains.preview.public') : t('subdomains.preview.hidden')}</span>;
}

const SECTION_KEYS = ['stats', 'visits_list', 'links', 'owner'] as const;
const COLUMN_KEYS = ['ip', 'internal_ip', 'geo', 'ua', 'referrer'] as const;

/** The policy's public view as a reader would meet it: each part marked public or hidden. */
function PublicPreview({ name, title, summary, breakdowns }: { name: string; title: string | null; summary: PublicSummary; breakdowns: string[] }) {
  const { t, locale } = useI18n();
  const nothing = SECTION_KEYS.every((key) => !summary[key]);
  const detailsUnused = !summary.stats && !summary.visits_list && COLUMN_KEYS.some((key) => summary[key]);
  return (
    <div class="preview" data-testid="preview">
      <p class="preview-page">
        <strong>{title ?? name}</strong>
        {title ? <span class="muted"> · {name}</span> : null}
      </p>
      <h3>{t('subdomains.preview.sections')}</h3>
      <dl class="preview-list">
        {SECTION_KEYS.map((key) => (
          <div key={key} data-key={key} data-public={String(summary[key])}>
            <dt>{t(`subdomains.preview.section.${key}`)}</dt>
            <dd>
              <State on={summary[key]} />
            </dd>
          </div>
        ))}
      </dl>
      {nothing ? <p class="muted">{t('subdomains.preview.nothing')}</p> : null}
      <h3>{t('subdomains.preview.columns')}</h3>
      <dl class="preview-list">
        {COLUMN_KEYS.map((key) => (
          <div key={key} data-key={key} data-public={String(summary[key])}>
            <dt>{t(`subdomains.preview.column.${key}`)}</dt>
            <dd>
              <State on={summary[key]} />
            </dd>
          </div>
        ))}
      </dl>
      {detailsUnused ? <p class="muted">{t('subdomains.preview.details_unused')}</p> : null}
      <h3>{t('subdomains.preview.limits')}</h3>
      <dl class="preview-list">
        <div data-key="publish_delay_sec" data-value={String(summary.publish_delay_sec)}>
          <dt>{t('subdomains.preview.delay')}</dt>
          <dd>{formatDelay(locale, t, summary.publish_delay_sec)}</dd>
        </div>
        <div data-key="max_items" data-value={String(summary.max_items)}>
          <dt>{t('subdomains.preview.max_items')}</dt>
          <dd>{formatNumber(locale, summary.max_items)}</dd>
        </div>
        <div>
          <dt>{t('subdomains.preview.breakdowns')}</dt>
          <dd>
            {summary.stats && breakdowns.length > 0
              ? breakdowns.map((key) => t(`subdomains.breakdown.${key}` as UiKey)).join(', ')
              : t('subdomains.preview.breakdowns_none')}
          </dd>
        </div>
      </dl>
    </div>
  );
}

const sameSummary = (a: PublicSummary, b: PublicSummary) => (Object.keys(a) as (keyof PublicSummary)[]).every((key) => a[key] === b[key]);

/** The public payload as the server gives it now, to compare with the preview. */
function ServedPayload({ served, preview }: { served: Loaded<PublicPage> & { reload: () => void }; preview: PublicSummary }) {
  const { t, locale } = useI18n();
  return (
    <section class="served" aria-labelledby="served-heading" data-testid="served">
      <h3 id="served-heading">{t('subdomains.served.heading')}</h3>
      <p class="muted">{t('subdomains.served.intro')}</p>
      {served.state === 'loading' ? <Loading /> : null}
      {served.state === 'error' ? <ErrorState error={served.error} retry={served.reload} /> : null}
      {served.state === 'ready' ? (
        <>
          <p
            class={sameSummary(served.data.public, preview) ? 'notice notice-ok' : 'notice'}
            data-testid="served-match"
            data-match={String(sameSummary(served.data.public, preview))}
          >
            {sameSummary(served.data.public, preview) ? t('subdomains.served.matches') : t('subdomains.served.differs')}
          </p>
          <dl class="preview-list">
            <div data-key="title">
              <dt>{t('subdomains.served.title')}</dt>
              <dd>{served.data.title ?? <span class="muted">{t('subdomains.served.no_title')}</span>}</dd>
            </div>
            <div data-key="owner">
              <dt>{t('subdomains.served.owner')}</dt>
              <dd>
                {served.data.owner ? (
                  (served.data.owner.display_name ?? <span class="muted">{t('subdomains.served.owner_unnamed')}</span>)
                ) : (
                  <span class="muted">{t('subdomains.served.absent')}</span>
                )}
              </dd>
            </div>
          </dl>
          <h4>{t('subdomains.served.links')}</h4>
          {served.data.links === undefined ? (
            <p class="muted" data-testid="served-links-absent">
              {t('subdomains.served.absent')}
            </p>
          ) : served.data.links.length === 0 ? (
            <p class="muted">{t('subdomains.served.links_empty')}</p>
          ) : (
            <ul class="served-links" data-testid="served-links">
              {served.data.links.map((link) => (
                <li key={link.slug}>
                  <a href={link.short_url} class="mono">
                    {link.short_url}
                  </a>
                  {link.title ? <span> · {link.title}</span> : null}
                  <span class="muted"> · {formatDate(locale, link.created_at)}</span>
                </li>
              ))}
            </ul>
          )}
        </>
      ) : null}
    </section>
  );
}
