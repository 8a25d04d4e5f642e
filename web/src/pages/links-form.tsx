// The link form: creating (with a client_id kept from the moment the form opens until the link is
// made, so a double click or a retry after a lost answer never makes two links) and editing (a
// PATCH of the fields that changed; emptied title, expiry and visit limit are cleared with null).
import type { RefObject } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { v4 as uuidv4 } from 'uuid';
import { api, ApiError, call, type paths, type Schemas } from '../api/client.js';
import { useI18n } from '../app/i18n.js';
import { Field, Notice } from '../app/ui.js';
import type { Link } from './links-parts.js';
import { emptyProtection, protectionCreate, protectionOf, protectionPatch, ProtectionFields, type ProtectionDraft } from './links-protection.js';
import { emptyRouting, routingCreate, routingOf, routingPatch, RoutingFields, UtmBuilder, type RoutingDraft } from './links-routing.js';

/**
 * A typed URL as the API takes it: percent-encoded where a browser would encode it (`<b>`, spaces in
 * the path, `'` in the query), so that what people paste from an address bar is accepted; text that
 * is no absolute URL goes as typed, for the API to name the rule it breaks.
 */
function encodedUrl(typed: string): string {
  const text = typed.trim();
  if (!/^https?:\/\//i.test(text) || !URL.canParse(text)) return text;
  const url = new URL(text);
  return url.href.replace(/[{}`"<> ']/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}

type CreateBody = paths['/api/v1/links']['post']['requestBody']['content']['application/json'];
type PatchBody = NonNullable<paths['/api/v1/links/{id}']['patch']['requestBody']>['content']['application/json'];
type RedirectType = NonNullable<CreateBody['redirect_type']>;
const REDIRECT_TYPES: RedirectType[] = [302, 301, 307, 308];

/** The form's inputs, as typed. */
interface Draft {
  subdomain: string;
  target_url: string;
  slug: string;
  title: string;
  tags: string;
  max_visits: string;
  expires_at: string;
  redirect_type: string;
  append_visit_id: boolean;
  /** Issue 40: password and fallback URL (links-protection.tsx). */
  protection: ProtectionDraft;
  /** Issue 40: rules, A/B split, query forwarding (links-routing.tsx). */
  routing: RoutingDraft;
}

const pad = (value: number) => String(value).padStart(2, '0');

/** An instant as a datetime-local value in the viewer's zone. */
export function toLocalInput(iso: string | null): string {
  if (!iso) return '';
  const date = new Date(iso);
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

/** A datetime-local value (the viewer's zone) as ISO 8601 with the zone's offset, e.g. 2026-12-01T09:30:00+01:00. */
export function fromLocalInput(value: string): string {
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return value;
  const offset = -date.getTimezoneOffset();
  const sign = offset >= 0 ? '+' : '-';
  const zone = `${sign}${pad(Math.floor(Math.abs(offset) / 60))}:${pad(Math.abs(offset) % 60)}`;
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}:00${zone}`;
}

const parseTags = (text: string) => text.split(/[\s,]+/).filter((tag) => tag.length > 0);

function draftOf(link: Link): Draft {
  return {
    subdomain: link.subdomain,
    target_url: link.target_url,
    slug: link.slug,
    title: link.title ?? '',
    tags: link.tags.join(', '),
    max_visits: link.max_visits === null ? '' : String(link.max_visits),
    expires_at: toLocalInput(link.expires_at),
    redirect_type: String(link.redirect_type),
    append_visit_id: link.append_visit_id,
    protection: protectionOf(link),
    routing: routingOf(link),
  };
}

/**
 * The errors of a failed create or update by field: a validation_error's details (a tag's index
 * folded into `tags`), a taken slug (409) on the slug field.
 */
function fieldErrors(error: unknown, slugTaken: string): Record<string, string> {
  if (!(error instanceof ApiError)) return {};
  const errors: Record<string, string> = {};
  if (error.code === 'validation_error') {
    for (const [path, rule] of Object.entries(error.details)) {
      const field = path.split('.')[0]!;
      if (typeof rule === 'string') errors[field] ??= rule;
    }
  }
  if (error.code === 'conflict' && typeof error.details.slug === 'string') errors.slug = slugTaken;
  return errors;
}

/** After a refusal, the focus goes to the first field it names, where its message is read. */
function useFocusInvalid(form: RefObject<HTMLFormElement | null>, error: unknown) {
  useEffect(() => {
    if (error) form.current?.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus();
  }, [error]);
}

/** The inputs of both forms; `prefix` keeps ids unique. */
function LinkFields({
  draft,
  set,
  errors,
  error,
  prefix,
  subdomains,
  link,
}: {
  draft: Draft;
  set: (patch: Partial<Draft>) => void;
  errors: Record<string, string>;
  /** The last refusal itself (the routing fields read their paths from it). */
  error: unknown;
  prefix: string;
  subdomains?: Schemas['Subdomain'][];
  /** The link being edited (none when creating). */
  link?: Link;
}) {
  const { t } = useI18n();
  const id = (field: string) => `${prefix}-${field}`;
  /** The ARIA attributes tying an input to its hint and error. */
  const aria = (field: string, hint = false) => {
    const described = [hint ? `${id(field)}-hint` : '', errors[field] ? `${id(field)}-error` : ''].filter(Boolean).join(' ');
    return { 'aria-invalid': errors[field] ? true : undefined, 'aria-describedby': described || undefined };
  };
  const text = (field: keyof Draft) => (event: Event) => set({ [field]: (event.currentTarget as HTMLInputElement).value });
  return (
    <>
      <div class="form-grid">
        {subdomains ? (
          <Field id={id('subdomain')} label={t('links.field.subdomain')} error={errors.subdomain}>
            <select id={id('subdomain')} value={draft.subdomain} onChange={text('subdomain')} required {...aria('subdomain')}>
              {subdomains.map((subdomain) => (
                <option key={subdomain.name} value={subdomain.name}>
                  {subdomain.name}
                </option>
              ))}
            </select>
          </Field>
        ) : null}
        <Field id={id('target_url')} label={t('links.field.target')} hint={t('links.field.target_hint')} error={errors.target_url}>
          <input
            id={id('target_url')}
            type="url"
            inputMode="url"
            autocomplete="url"
            required
            value={draft.target_url}
            onInput={text('target_url')}
            {...aria('target_url', true)}
          />
        </Field>
      </div>
      <UtmBuilder target={draft.target_url} onTarget={(url) => set({ target_url: url })} prefix={prefix} />
      <div class="form-grid">
        <Field id={id('slug')} label={t('links.field.slug')} hint={t('links.field.slug_hint')} error={errors.slug}>
          <input
            id={id('slug')}
            type="text"
            autocomplete="off"
            spellcheck={false}
            maxLength={64}
            value={draft.slug}
            onInput={text('slug')}
            {...aria('slug', true)}
          />
        </Field>
        <Field id={id('title')} label={t('links.field.title')} error={errors.title}>
          <input id={id('title')} type="text" maxLength={200} value={draft.title} onInput={text('title')} {...aria('title')} />
        </Field>
        <Field id={id('tags')} label={t('links.field.tags')} hint={t('links.field.tags_hint')} error={errors.tags}>
          <input id={id('tags')} type="text" autocomplete="off" value={draft.tags} onInput={text('tags')} {...aria('tags', true)} />
        </Field>
      </div>
      <div class="form-grid">
        <Field id={id('max_visits')} label={t('links.field.max_visits')} hint={t('links.field.max_visits_hint')} error={errors.max_visits}>
          <input
            id={id('max_visits')}
            type="number"
            min={1}
            step={1}
            inputMode="numeric"
            value={draft.max_visits}
            onInput={text('max_visits')}
            {...aria('max_visits', true)}
          />
        </Field>
        <Field id={id('expires_at')} label={t('links.field.expires')} hint={t('links.field.expires_hint')} error={errors.expires_at}>
          <input id={id('expires_at')} type="datetime-local" value={draft.expires_at} onInput={text('expires_at')} {...aria('expires_at', true)} />
        </Field>
        <Field id={id('redirect_type')} label={t('links.field.redirect')} error={errors.redirect_type}>
          <select id={id('redirect_type')} value={draft.redirect_type} onChange={text('redirect_type')} {...aria('redirect_type')}>
            {REDIRECT_TYPES.map((code) => (
              <option key={code} value={String(code)}>
                {t(`links.redirect.${code}`)}
              </option>
            ))}
          </select>
        </Field>
      </div>
      <div class="checkbox link-append">
        <input
          id={id('append')}
          type="checkbox"
          checked={draft.append_visit_id}
          onChange={(event) => set({ append_visit_id: event.currentTarget.checked })}
          aria-describedby={`${id('append')}-hint`}
        />
        <div>
          <label for={id('append')}>{t('links.field.append_visit_id')}</label>
          <small class="hint muted" id={`${id('append')}-hint`}>
            {t('links.field.append_visit_id_hint')}
          </small>
        </div>
      </div>
      <ProtectionFields
        draft={draft.protection}
        set={(patch) => set({ protection: { ...draft.protection, ...patch } })}
        errors={errors}
        prefix={prefix}
        link={link}
      />
      <RoutingFields draft={draft.routing} set={(routing) => set({ routing })} error={error} prefix={prefix} target={draft.target_url} />
    </>
  );
}

/** A failed request's general message (the field errors sit on the fields). */
function FormError({ error }: { error: unknown }) {
  const { t } = useI18n();
  if (!error) return null;
  if (error instanceof ApiError && error.code === 'conflict' && typeof error.details.client_id === 'string')
    return <Notice kind="error">{t('links.client_id_conflict')}</Notice>;
  return <Notice kind="error">{error instanceof Error ? error.message : String(error)}</Notice>;
}

/**
 * One write at a time: `run` sends it unless one is pending, keeps the API's refusal for the fields,
 * and says when it is busy. The state update that disables the button lands after the next event:
 * a ref stops a second submit (a double click) at once.
 */
function useSubmission() {
  const pending = useRef(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const run = async (write: () => Promise<void>) => {
    if (pending.current) return;
    pending.current = true;
    setBusy(true);
    setError(undefined);
    try {
      await write();
    } catch (caught) {
      setError(caught);
    } finally {
      pending.current = false;
      setBusy(false);
    }
  };
  return { busy, error, setError, pending, run };
}

/** Creates a link; `onCreated` gets it (also when the answer was a replay of the same client_id). */
export function CreateLinkForm({
  subdomains,
  initialSubdomain,
  onCreated,
  onCancel,
}: {
  subdomains: Schemas['Subdomain'][];
  initialSubdomain?: string;
  onCreated: (link: Link) => void;
  onCancel: () => void;
}) {
  const { t } = useI18n();
  const start = initialSubdomain && subdomains.some((subdomain) => subdomain.name === initialSubdomain) ? initialSubdomain : subdomains[0]!.name;
  /** A new link forwards the query as its subdomain's default says, until the box is changed. */
  const forwardOf = (name: string) => subdomains.find((subdomain) => subdomain.name === name)?.forward_query ?? false;
  const [draft, setDraft] = useState<Draft>({
    subdomain: start,
    target_url: '',
    slug: '',
    title: '',
    tags: '',
    max_visits: '',
    expires_at: '',
    redirect_type: '302',
    append_visit_id: false,
    protection: emptyProtection(),
    routing: emptyRouting(forwardOf(start)),
  });
  // One key for this form until a link is made: a second submit (double click, retry) replays it.
  const clientId = useRef<string | undefined>(undefined);
  // uuid's v4: crypto.randomUUID where the origin is secure, getRandomValues on a plain-HTTP LAN origin.
  clientId.current ??= uuidv4();
  const { busy, error, run } = useSubmission();
  const form = useRef<HTMLFormElement>(null);
  useEffect(() => {
    form.current?.querySelector<HTMLInputElement>('input[type="url"]')?.focus();
  }, []);
  useFocusInvalid(form, error);

  const submit = async (event: Event) => {
    event.preventDefault();
    const body: CreateBody = { subdomain: draft.subdomain, target_url: encodedUrl(draft.target_url), client_id: clientId.current! };
    if (draft.slug.trim()) body.slug = draft.slug.trim();
    if (draft.title.trim()) body.title = draft.title.trim();
    const tags = parseTags(draft.tags);
    if (tags.length > 0) body.tags = tags;
    if (draft.max_visits !== '') body.max_visits = Number(draft.max_visits);
    if (draft.expires_at) body.expires_at = fromLocalInput(draft.expires_at);
    body.redirect_type = Number(draft.redirect_type) as RedirectType;
    if (draft.append_visit_id) body.append_visit_id = true;
    Object.assign(body, protectionCreate(draft.protection, encodedUrl), routingCreate(draft.routing, encodedUrl));
    await run(async () => {
      const { data } = await call(api.POST('/api/v1/links', { body }));
      clientId.current = undefined;
      onCreated(data);
    });
  };

  const errors = fieldErrors(error, t('links.slug_taken'));
  return (
    <form class="card" id="link-create" ref={form} onSubmit={submit} noValidate aria-labelledby="link-create-heading">
      <h2 id="link-create-heading">{t('links.create_title')}</h2>
      <LinkFields
        draft={draft}
        set={(patch) =>
          setDraft((previous) => {
            const next = { ...previous, ...patch };
            // Another subdomain: its default forwarding, unless the box was changed.
            if (patch.subdomain !== undefined && !next.routing.forwardTouched) next.routing = { ...next.routing, forward_query: forwardOf(patch.subdomain) };
            return next;
          })
        }
        errors={errors}
        error={error}
        prefix="link-new"
        subdomains={subdomains}
      />
      <FormError error={error} />
      <div class="form-actions">
        <button type="submit" class="button-primary" disabled={busy}>
          {busy ? t('links.creating') : t('links.create_submit')}
        </button>
        <button type="button" onClick={onCancel}>
          {t('action.cancel')}
        </button>
      </div>
    </form>
  );
}

/** Edits a link: sends only what changed; an emptied title, expiry or visit limit is cleared. */
export function EditLinkForm({ link, onSaved }: { link: Link; onSaved: (link: Link) => void }) {
  const { t } = useI18n();
  const initial = draftOf(link);
  const [draft, setDraft] = useState<Draft>(initial);
  const { busy, error, setError, pending, run } = useSubmission();
  const [result, setResult] = useState<'saved' | 'unchanged'>();
  const form = useRef<HTMLFormElement>(null);
  useFocusInvalid(form, error);

  const submit = async (event: Event) => {
    event.preventDefault();
    if (pending.current) return;
    const body: PatchBody = {};
    if (draft.target_url.trim() !== initial.target_url) body.target_url = encodedUrl(draft.target_url);
    if (draft.slug.trim() !== initial.slug) body.slug = draft.slug.trim();
    if (draft.title.trim() !== initial.title) body.title = draft.title.trim() || null;
    const tags = parseTags(draft.tags);
    if (tags.join(',') !== link.tags.join(',')) body.tags = tags;
    if (draft.max_visits !== initial.max_visits) body.max_visits = draft.max_visits === '' ? null : Number(draft.max_visits);
    if (draft.expires_at !== initial.expires_at) body.expires_at = draft.expires_at ? fromLocalInput(draft.expires_at) : null;
    if (draft.redirect_type !== initial.redirect_type) body.redirect_type = Number(draft.redirect_type) as RedirectType;
    if (draft.append_visit_id !== initial.append_visit_id) body.append_visit_id = draft.append_visit_id;
    Object.assign(body, protectionPatch(draft.protection, link, encodedUrl), routingPatch(draft.routing, link, encodedUrl));
    setError(undefined);
    if (Object.keys(body).length === 0) {
      setResult('unchanged');
      return;
    }
    setResult(undefined);
    await run(async () => {
      const { data } = await call(api.PATCH('/api/v1/links/{id}', { params: { path: { id: link.id } }, body }));
      setDraft(draftOf(data));
      setResult('saved');
      onSaved(data);
    });
  };

  const errors = fieldErrors(error, t('links.slug_taken'));
  return (
    <form class="card" ref={form} onSubmit={submit} noValidate aria-labelledby="link-edit-heading">
      <h2 id="link-edit-heading">{t('links.edit_title')}</h2>
      <LinkFields
        draft={draft}
        set={(patch) => setDraft((previous) => ({ ...previous, ...patch }))}
        errors={errors}
        error={error}
        prefix="link-edit"
        link={link}
      />
      <FormError error={error} />
      {result === 'saved' ? <Notice kind="ok">{t('links.saved')}</Notice> : null}
      {result === 'unchanged' ? <Notice kind="info">{t('links.unchanged')}</Notice> : null}
      <div class="form-actions">
        <button type="submit" class="button-primary" disabled={busy}>
          {busy ? t('action.saving') : t('action.save')}
        </button>
      </div>
    </form>
  );
}
