// Issue 40, the link form's routing: redirect rules (ordered, each a condition and a target, moved
// with buttons), the A/B split (2–5 weighted targets), query forwarding (on create, the chosen
// subdomain's default until it is touched), a preview of where a described visitor goes (worked out
// by shared/links/rule-match.ts, the module the edge matches with), and the UTM builder.
import { useEffect, useState } from 'preact/hooks';
import { ApiError } from '../api/client.js';
import { useI18n } from '../app/i18n.js';
import { Field } from '../app/ui.js';
import type { UiKey } from '#shared/i18n/ui/index.js';
import { firstMatchingRule, forwardQuery, type RuleFacts } from '#shared/links/rule-match.js';
import type { Link } from './links-parts.js';

type ApiRule = Link['rules'][number];
type ApiCondition = ApiRule['condition'];
type ConditionType = ApiCondition['type'];
type Device = 'desktop' | 'mobile' | 'tablet';
type Variant = NonNullable<Link['variants']>[number];

const CONDITION_TYPES: ConditionType[] = ['device', 'os', 'browser', 'country', 'language', 'time', 'query'];
const DEVICES: Device[] = ['desktop', 'mobile', 'tablet'];
/** As the API: at most 20 rules, 2–5 variants weighing 1–100. */
const MAX_RULES = 20;
const MIN_VARIANTS = 2;
const MAX_VARIANTS = 5;

/** One rule as typed. `key` stays with it when it moves. */
export interface RuleDraft {
  key: number;
  type: ConditionType;
  devices: Device[];
  /** Comma-separated names or codes (os, browser, country, language). */
  values: string;
  from: string;
  to: string;
  days: number[];
  name: string;
  value: string;
  target_url: string;
}

export interface VariantDraft {
  key: number;
  target_url: string;
  weight: string;
}

/** The routing inputs, as typed. */
export interface RoutingDraft {
  rules: RuleDraft[];
  variants: VariantDraft[];
  forward_query: boolean;
  /** Whether the forwarding box was changed (a create sends it only then, so the subdomain's default applies otherwise). */
  forwardTouched: boolean;
}

let nextKey = 1;
const newKey = () => nextKey++;

const blankRule = (): RuleDraft => ({
  key: newKey(),
  type: 'device',
  devices: [],
  values: '',
  from: '09:00',
  to: '17:00',
  days: [],
  name: '',
  value: '',
  target_url: '',
});

function ruleDraftOf(rule: ApiRule): RuleDraft {
  const draft = { ...blankRule(), type: rule.condition.type, target_url: rule.target_url };
  const condition = rule.condition;
  switch (condition.type) {
    case 'device':
      return { ...draft, devices: [...condition.values] };
    case 'time':
      return { ...draft, from: condition.from, to: condition.to, days: [...(condition.days ?? [])] };
    case 'query':
      return { ...draft, name: condition.name, value: condition.value ?? '' };
    default:
      return { ...draft, values: condition.values.join(', ') };
  }
}

export const emptyRouting = (forwardQuery: boolean): RoutingDraft => ({ rules: [], variants: [], forward_query: forwardQuery, forwardTouched: false });

export const routingOf = (link: Link): RoutingDraft => ({
  rules: link.rules.map(ruleDraftOf),
  variants: (link.variants ?? []).map((variant) => ({ key: newKey(), target_url: variant.target_url, weight: String(variant.weight) })),
  forward_query: link.forward_query,
  forwardTouched: false,
});

const listOf = (text: string) =>
  text
    .split(/[\s,;]+/)
    .map((item) => item.trim())
    .filter((item) => item !== '');

/** The condition as the API takes it, from what was typed (the API checks it; codes are cased as it wants them). */
function conditionOf(draft: RuleDraft): ApiCondition {
  switch (draft.type) {
    case 'device':
      return { type: 'device', values: draft.devices };
    case 'time':
      return { type: 'time', from: draft.from, to: draft.to, ...(draft.days.length > 0 ? { days: [...draft.days].sort() } : {}) };
    case 'query':
      return { type: 'query', name: draft.name.trim(), ...(draft.value !== '' ? { value: draft.value } : {}) };
    case 'country':
      return { type: 'country', values: listOf(draft.values).map((code) => code.toUpperCase()) };
    case 'language':
      return { type: 'language', values: listOf(draft.values).map((code) => code.toLowerCase()) };
    default:
      return { type: draft.type, values: listOf(draft.values) };
  }
}

/** Whether a rule is complete enough to be matched in the preview. */
function complete(draft: RuleDraft): boolean {
  const condition = conditionOf(draft);
  const filled = 'values' in condition ? condition.values.length > 0 : condition.type === 'query' ? condition.name !== '' : true;
  return filled && /^https?:\/\/./i.test(draft.target_url.trim());
}

const rulesBody = (draft: RoutingDraft, encode: (url: string) => string): ApiRule[] =>
  draft.rules.map((rule) => ({ condition: conditionOf(rule), target_url: encode(rule.target_url) }));
const variantsBody = (draft: RoutingDraft, encode: (url: string) => string): Variant[] =>
  draft.variants.map((variant) => ({ target_url: encode(variant.target_url), weight: Number(variant.weight) }));

/** The create body's routing fields: what was set; `forward_query` only when the box was changed. */
export function routingCreate(draft: RoutingDraft, encode: (url: string) => string): { rules?: ApiRule[]; variants?: Variant[]; forward_query?: boolean } {
  return {
    ...(draft.rules.length > 0 ? { rules: rulesBody(draft, encode) } : {}),
    ...(draft.variants.length > 0 ? { variants: variantsBody(draft, encode) } : {}),
    ...(draft.forwardTouched ? { forward_query: draft.forward_query } : {}),
  };
}

/** The PATCH's routing fields: what differs from the link (`[]` clears the rules, `null` the split). */
export function routingPatch(
  draft: RoutingDraft,
  link: Link,
  encode: (url: string) => string,
): { rules?: ApiRule[]; variants?: Variant[] | null; forward_query?: boolean } {
  const patch: { rules?: ApiRule[]; variants?: Variant[] | null; forward_query?: boolean } = {};
  const rules = rulesBody(draft, encode);
  if (JSON.stringify(rules) !== JSON.stringify(link.rules)) patch.rules = rules;
  const variants = variantsBody(draft, encode);
  if (variants.length === 0 && link.variants !== null) patch.variants = null;
  else if (variants.length > 0 && JSON.stringify(variants) !== JSON.stringify(link.variants)) patch.variants = variants;
  if (draft.forward_query !== link.forward_query) patch.forward_query = draft.forward_query;
  return patch;
}

/**
 * The API's refusals of routing fields, by path: `rules.N.condition`, `rules.N.target_url`,
 * `variants.N.target_url`, `variants.N.weight`, and `rules` or `variants` for the lists themselves.
 * A 422 names them in `details`; a rule target on the platform's hosts is a 403 naming its path too.
 */
export function routingErrors(error: unknown): Record<string, string> {
  if (!(error instanceof ApiError) || (error.code !== 'validation_error' && error.code !== 'forbidden')) return {};
  const errors: Record<string, string> = {};
  for (const [path, rule] of Object.entries(error.details)) {
    if (typeof rule !== 'string') continue;
    const [list, index, field] = path.split('.');
    if (list !== 'rules' && list !== 'variants') continue;
    const key = index === undefined ? list : `${list}.${index}.${field === 'target_url' || field === 'weight' ? field : 'condition'}`;
    errors[key] ??= rule;
  }
  return errors;
}

/** The routing fieldset of the create and edit forms. */
export function RoutingFields({
  draft,
  set,
  error,
  prefix,
  target,
}: {
  draft: RoutingDraft;
  set: (next: RoutingDraft) => void;
  /** The last refusal of the form (its routing paths are shown here). */
  error: unknown;
  prefix: string;
  /** The link's own target URL (the split starts from it; the preview's last resort). */
  target: string;
}) {
  const { t } = useI18n();
  const errors = routingErrors(error);
  // After a move, the focus stays with the moved rule: on the same button, or on its other move
  // button when that one is now disabled (moved to the top or the bottom).
  const [focus, setFocus] = useState<{ id: string; otherwise: string }>();
  useEffect(() => {
    if (!focus) return;
    const same = document.getElementById(focus.id) as HTMLButtonElement | null;
    (same && !same.disabled ? same : document.getElementById(focus.otherwise))?.focus();
  }, [focus, draft.rules]);
  const setRules = (rules: RuleDraft[]) => set({ ...draft, rules });
  const setRule = (key: number, patch: Partial<RuleDraft>) => setRules(draft.rules.map((rule) => (rule.key === key ? { ...rule, ...patch } : rule)));
  const move = (index: number, by: -1 | 1, key: number) => {
    const rules = [...draft.rules];
    const [moved] = rules.splice(index, 1);
    rules.splice(index + by, 0, moved!);
    setRules(rules);
    const id = `${prefix}-rule-${key}`;
    setFocus(by < 0 ? { id: `${id}-up`, otherwise: `${id}-down` } : { id: `${id}-down`, otherwise: `${id}-up` });
  };
  const setVariants = (variants: VariantDraft[]) => set({ ...draft, variants });
  const totalWeight = draft.variants.reduce((sum, variant) => sum + (Number(variant.weight) > 0 ? Number(variant.weight) : 0), 0);
  return (
    <fieldset class="link-routing">
      <legend>{t('links.routing.legend')}</legend>
      <fieldset class="routing-rules">
        <legend>{t('links.routing.rules')}</legend>
        <p class="hint muted">{t('links.routing.rules_hint')}</p>
        {errors.rules ? (
          <p class="field-error" role="alert">
            {errors.rules}
          </p>
        ) : null}
        {draft.rules.length === 0 ? (
          <p class="muted">{t('links.routing.no_rules')}</p>
        ) : (
          <ol class="rule-list">
            {draft.rules.map((rule, index) => (
              <RuleEditor
                key={rule.key}
                rule={rule}
                index={index}
                count={draft.rules.length}
                prefix={`${prefix}-rule-${rule.key}`}
                errors={errors}
                set={(patch) => setRule(rule.key, patch)}
                move={(by) => move(index, by, rule.key)}
                remove={() => setRules(draft.rules.filter((other) => other.key !== rule.key))}
              />
            ))}
          </ol>
        )}
        <button type="button" onClick={() => setRules([...draft.rules, blankRule()])} disabled={draft.rules.length >= MAX_RULES}>
          {t('links.routing.add_rule')}
        </button>
        {draft.rules.length >= MAX_RULES ? <small class="hint muted"> {t('links.routing.max_rules', { max: MAX_RULES })}</small> : null}
      </fieldset>

      <fieldset class="routing-split">
        <legend>{t('links.routing.split')}</legend>
        <p class="hint muted">{t('links.routing.split_hint')}</p>
        {errors.variants ? (
          <p class="field-error" role="alert">
            {errors.variants}
          </p>
        ) : null}
        {draft.variants.length === 0 ? (
          <button
            type="button"
            onClick={() =>
              setVariants([
                { key: newKey(), target_url: target, weight: '50' },
                { key: newKey(), target_url: '', weight: '50' },
              ])
            }
          >
            {t('links.routing.add_split')}
          </button>
        ) : (
          <>
            <ol class="variant-list">
              {draft.variants.map((variant, index) => {
                const id = `${prefix}-variant-${variant.key}`;
                const weight = Number(variant.weight);
                const share = totalWeight > 0 && weight > 0 ? Math.round((weight / totalWeight) * 1000) / 10 : 0;
                const targetError = errors[`variants.${index}.target_url`];
                const weightError = errors[`variants.${index}.weight`];
                return (
                  <li key={variant.key} class="variant-row">
                    <Field id={`${id}-target`} label={t('links.routing.variant_n', { n: index + 1 })} error={targetError}>
                      <input
                        id={`${id}-target`}
                        type="url"
                        inputMode="url"
                        value={variant.target_url}
                        aria-invalid={targetError ? true : undefined}
                        aria-describedby={targetError ? `${id}-target-error` : undefined}
                        onInput={(event) =>
                          setVariants(draft.variants.map((other) => (other.key === variant.key ? { ...other, target_url: event.currentTarget.value } : other)))
                        }
                      />
                    </Field>
                    <Field id={`${id}-weight`} label={t('links.routing.weight')} hint={t('links.routing.share', { share })} error={weightError}>
                      <input
                        id={`${id}-weight`}
                        type="number"
                        min={1}
                        max={100}
                        step={1}
                        inputMode="numeric"
                        value={variant.weight}
                        aria-invalid={weightError ? true : undefined}
                        aria-describedby={[`${id}-weight-hint`, weightError ? `${id}-weight-error` : ''].filter(Boolean).join(' ')}
                        onInput={(event) =>
                          setVariants(draft.variants.map((other) => (other.key === variant.key ? { ...other, weight: event.currentTarget.value } : other)))
                        }
                      />
                    </Field>
                    <button
                      type="button"
                      class="variant-remove"
                      disabled={draft.variants.length <= MIN_VARIANTS}
                      onClick={() => setVariants(draft.variants.filter((other) => other.key !== variant.key))}
                    >
                      {t('links.routing.remove_variant', { n: index + 1 })}
                    </button>
                  </li>
                );
              })}
            </ol>
            <div class="row-actions">
              <button
                type="button"
                disabled={draft.variants.length >= MAX_VARIANTS}
                onClick={() => setVariants([...draft.variants, { key: newKey(), target_url: '', weight: '50' }])}
              >
                {t('links.routing.add_variant')}
              </button>
              <button type="button" onClick={() => setVariants([])}>
                {t('links.routing.remove_split')}
              </button>
            </div>
          </>
        )}
      </fieldset>

      <div class="checkbox">
        <input
          id={`${prefix}-forward`}
          type="checkbox"
          checked={draft.forward_query}
          aria-describedby={`${prefix}-forward-hint`}
          onChange={(event) => set({ ...draft, forward_query: event.currentTarget.checked, forwardTouched: true })}
        />
        <div>
          <label for={`${prefix}-forward`}>{t('links.routing.forward')}</label>
          <small class="hint muted" id={`${prefix}-forward-hint`}>
            {t('links.routing.forward_hint')}
          </small>
        </div>
      </div>

      <RoutePreview draft={draft} prefix={prefix} target={target} />
    </fieldset>
  );
}

function RuleEditor({
  rule,
  index,
  count,
  prefix,
  errors,
  set,
  move,
  remove,
}: {
  rule: RuleDraft;
  index: number;
  count: number;
  prefix: string;
  errors: Record<string, string>;
  set: (patch: Partial<RuleDraft>) => void;
  move: (by: -1 | 1) => void;
  remove: () => void;
}) {
  const { t, locale } = useI18n();
  const n = index + 1;
  const conditionError = errors[`rules.${index}.condition`];
  const targetError = errors[`rules.${index}.target_url`];
  const invalid = (error: string | undefined, id: string) => ({
    'aria-invalid': error ? true : undefined,
    'aria-describedby': error ? `${id}-error` : undefined,
  });
  const valuesId = `${prefix}-values`;
  // Weekday names in the viewer's language: 2026-11-29 is a Sunday (0, as the API counts).
  const weekday = (day: number) => new Intl.DateTimeFormat(locale, { weekday: 'short', timeZone: 'UTC' }).format(new Date(Date.UTC(2026, 10, 29 + day)));
  return (
    <li class="rule-item">
      <fieldset>
        <legend>{t('links.routing.rule_n', { n })}</legend>
        <div class="form-grid">
          <Field id={`${prefix}-type`} label={t('links.routing.condition')}>
            <select id={`${prefix}-type`} value={rule.type} onChange={(event) => set({ type: event.currentTarget.value as ConditionType })}>
              {CONDITION_TYPES.map((type) => (
                <option key={type} value={type}>
                  {t(`links.routing.type.${type}` as UiKey)}
                </option>
              ))}
            </select>
          </Field>
          {rule.type === 'device' ? (
            <fieldset class="inline-checks" aria-describedby={conditionError ? `${valuesId}-error` : undefined}>
              <legend>{t('links.routing.values')}</legend>
              {DEVICES.map((device) => (
                <label key={device} class="inline-check">
                  <input
                    type="checkbox"
                    checked={rule.devices.includes(device)}
                    aria-invalid={conditionError ? true : undefined}
                    onChange={(event) =>
                      set({ devices: event.currentTarget.checked ? [...rule.devices, device] : rule.devices.filter((other) => other !== device) })
                    }
                  />{' '}
                  {t(`links.routing.device.${device}` as UiKey)}
                </label>
              ))}
              {conditionError ? (
                <small class="field-error" id={`${valuesId}-error`} role="alert">
                  {conditionError}
                </small>
              ) : null}
            </fieldset>
          ) : null}
          {rule.type === 'os' || rule.type === 'browser' || rule.type === 'country' || rule.type === 'language' ? (
            <Field id={valuesId} label={t('links.routing.values')} hint={t(`links.routing.hint.${rule.type}` as UiKey)} error={conditionError}>
              <input
                id={valuesId}
                type="text"
                autocomplete="off"
                spellcheck={false}
                value={rule.values}
                onInput={(event) => set({ values: event.currentTarget.value })}
                aria-invalid={conditionError ? true : undefined}
                aria-describedby={[`${valuesId}-hint`, conditionError ? `${valuesId}-error` : ''].filter(Boolean).join(' ')}
              />
            </Field>
          ) : null}
          {rule.type === 'time' ? (
            <>
              <Field id={`${prefix}-from`} label={t('links.routing.from')} error={conditionError}>
                <input
                  id={`${prefix}-from`}
                  type="time"
                  value={rule.from}
                  onInput={(event) => set({ from: event.currentTarget.value })}
                  {...invalid(conditionError, `${prefix}-from`)}
                />
              </Field>
              <Field id={`${prefix}-to`} label={t('links.routing.to')}>
                <input id={`${prefix}-to`} type="time" value={rule.to} onInput={(event) => set({ to: event.currentTarget.value })} />
              </Field>
              <fieldset class="inline-checks">
                <legend>{t('links.routing.days')}</legend>
                {[1, 2, 3, 4, 5, 6, 0].map((day) => (
                  <label key={day} class="inline-check">
                    <input
                      type="checkbox"
                      checked={rule.days.includes(day)}
                      onChange={(event) => set({ days: event.currentTarget.checked ? [...rule.days, day] : rule.days.filter((other) => other !== day) })}
                    />{' '}
                    {weekday(day)}
                  </label>
                ))}
              </fieldset>
            </>
          ) : null}
          {rule.type === 'query' ? (
            <>
              <Field id={`${prefix}-name`} label={t('links.routing.param_name')} error={conditionError}>
                <input
                  id={`${prefix}-name`}
                  type="text"
                  autocomplete="off"
                  spellcheck={false}
                  value={rule.name}
                  onInput={(event) => set({ name: event.currentTarget.value })}
                  {...invalid(conditionError, `${prefix}-name`)}
                />
              </Field>
              <Field id={`${prefix}-value`} label={t('links.routing.param_value')}>
                <input
                  id={`${prefix}-value`}
                  type="text"
                  autocomplete="off"
                  value={rule.value}
                  onInput={(event) => set({ value: event.currentTarget.value })}
                />
              </Field>
            </>
          ) : null}
          <Field id={`${prefix}-target`} label={t('links.routing.rule_target')} error={targetError}>
            <input
              id={`${prefix}-target`}
              type="url"
              inputMode="url"
              value={rule.target_url}
              onInput={(event) => set({ target_url: event.currentTarget.value })}
              {...invalid(targetError, `${prefix}-target`)}
            />
          </Field>
        </div>
        <div class="row-actions">
          <button type="button" id={`${prefix}-up`} disabled={index === 0} onClick={() => move(-1)}>
            {t('links.routing.move_up', { n })}
          </button>
          <button type="button" id={`${prefix}-down`} disabled={index === count - 1} onClick={() => move(1)}>
            {t('links.routing.move_down', { n })}
          </button>
          <button type="button" class="button-danger" onClick={remove}>
            {t('links.routing.remove_rule', { n })}
          </button>
        </div>
      </fieldset>
    </li>
  );
}

/** A described visitor, as the preview takes it. */
interface Visitor {
  device: Device;
  os: string;
  browser: string;
  country: string;
  language: string;
  time: string;
  day: number;
  query: string;
}

/** Where the described visitor goes with the rules, split and forwarding as the form holds them now. */
function RoutePreview({ draft, prefix, target }: { draft: RoutingDraft; prefix: string; target: string }) {
  const { t, locale } = useI18n();
  const [visitor, setVisitor] = useState<Visitor>({
    device: 'mobile',
    os: 'iOS',
    browser: 'Safari',
    country: 'DE',
    language: 'de',
    time: '12:00',
    day: 1,
    query: '',
  });
  const change = (patch: Partial<Visitor>) => setVisitor((current) => ({ ...current, ...patch }));
  const [hours, minutes] = visitor.time.split(':').map(Number) as [number, number];
  const query = visitor.query.replace(/^\?/, '');
  const facts: RuleFacts = {
    device: () => (visitor.device === 'desktop' ? '' : visitor.device),
    os: () => visitor.os.trim(),
    browser: () => visitor.browser.trim(),
    country: () => visitor.country.trim().toUpperCase(),
    language: () => visitor.language.trim().toLowerCase(),
    at: Date.UTC(2026, 10, 29 + visitor.day, hours || 0, minutes || 0),
    query,
  };
  // Incomplete rules are skipped (and said so); the numbers stay those of the form.
  const usable = draft.rules.map((rule, index) => ({ rule, index })).filter(({ rule }) => complete(rule));
  const skipped = draft.rules.map((rule, index) => ({ rule, index })).filter(({ rule }) => !complete(rule));
  const matched = firstMatchingRule(
    usable.map(({ rule }) => ({ condition: conditionOf(rule), target_url: rule.target_url.trim() })),
    facts,
  );
  const forwarded = (url: string) => (draft.forward_query ? forwardQuery(url, query) : url);
  let answer: string;
  if (matched >= 0) {
    const { rule, index } = usable[matched]!;
    answer = t('links.routing.goes_rule', { target: forwarded(rule.target_url.trim()), n: index + 1 });
  } else if (draft.variants.length >= MIN_VARIANTS) {
    const total = draft.variants.reduce((sum, variant) => sum + Math.max(0, Number(variant.weight) || 0), 0);
    const shares = draft.variants
      .map((variant) => `${forwarded(variant.target_url.trim()) || '…'} (${total > 0 ? Math.round(((Number(variant.weight) || 0) / total) * 1000) / 10 : 0} %)`)
      .join(', ');
    answer = t('links.routing.goes_split', { shares });
  } else answer = t('links.routing.goes_target', { target: forwarded(target.trim()) || '…' });
  const id = (field: string) => `${prefix}-preview-${field}`;
  const weekday = (day: number) => new Intl.DateTimeFormat(locale, { weekday: 'long', timeZone: 'UTC' }).format(new Date(Date.UTC(2026, 10, 29 + day)));
  const text = (field: 'os' | 'browser' | 'country' | 'language' | 'query', label: string) => (
    <Field id={id(field)} label={label}>
      <input
        id={id(field)}
        type="text"
        autocomplete="off"
        spellcheck={false}
        value={visitor[field]}
        onInput={(event) => change({ [field]: event.currentTarget.value })}
      />
    </Field>
  );
  return (
    <details class="routing-preview">
      <summary>{t('links.routing.preview')}</summary>
      <p class="hint muted">{t('links.routing.preview_hint')}</p>
      <div class="form-grid">
        <Field id={id('device')} label={t('links.routing.type.device')}>
          <select id={id('device')} value={visitor.device} onChange={(event) => change({ device: event.currentTarget.value as Device })}>
            {DEVICES.map((device) => (
              <option key={device} value={device}>
                {t(`links.routing.device.${device}` as UiKey)}
              </option>
            ))}
          </select>
        </Field>
        {text('os', t('links.routing.type.os'))}
        {text('browser', t('links.routing.type.browser'))}
        {text('country', t('links.routing.type.country'))}
        {text('language', t('links.routing.type.language'))}
        <Field id={id('time')} label={t('links.routing.preview_time')}>
          <input id={id('time')} type="time" value={visitor.time} onInput={(event) => change({ time: event.currentTarget.value })} />
        </Field>
        <Field id={id('day')} label={t('links.routing.preview_day')}>
          <select id={id('day')} value={String(visitor.day)} onChange={(event) => change({ day: Number(event.currentTarget.value) })}>
            {[1, 2, 3, 4, 5, 6, 0].map((day) => (
              <option key={day} value={String(day)}>
                {weekday(day)}
              </option>
            ))}
          </select>
        </Field>
        {text('query', t('links.routing.preview_query'))}
      </div>
      <output
        class="routing-answer"
        for={[id('device'), id('os'), id('browser'), id('country'), id('language'), id('time'), id('day'), id('query')].join(' ')}
        aria-live="polite"
      >
        {answer}
      </output>
      {skipped.map(({ index }) => (
        <p key={index} class="hint muted">
          {t('links.routing.preview_incomplete', { n: index + 1 })}
        </p>
      ))}
    </details>
  );
}

const UTM_PARAMS = ['source', 'medium', 'campaign', 'term', 'content'] as const;

/** The UTM builder under the target URL: reads the target's utm_* and writes them back, other parameters kept. */
export function UtmBuilder({ target, onTarget, prefix }: { target: string; onTarget: (url: string) => void; prefix: string }) {
  const { t } = useI18n();
  const text = target.trim();
  const url = /^https?:\/\//i.test(text) && URL.canParse(text) ? new URL(text) : undefined;
  const write = (param: (typeof UTM_PARAMS)[number], value: string) => {
    if (!url) return;
    if (value === '') url.searchParams.delete(`utm_${param}`);
    else url.searchParams.set(`utm_${param}`, value);
    onTarget(url.toString());
  };
  return (
    <details class="utm-builder">
      <summary>{t('links.routing.utm')}</summary>
      <p class="hint muted" id={`${prefix}-utm-hint`}>
        {url ? t('links.routing.utm_hint') : t('links.routing.utm_needs_url')}
      </p>
      <div class="form-grid">
        {UTM_PARAMS.map((param) => (
          <Field key={param} id={`${prefix}-utm-${param}`} label={t(`links.routing.utm.${param}` as UiKey)}>
            <input
              id={`${prefix}-utm-${param}`}
              type="text"
              autocomplete="off"
              spellcheck={false}
              disabled={!url}
              aria-describedby={`${prefix}-utm-hint`}
              value={url?.searchParams.get(`utm_${param}`) ?? ''}
              onInput={(event) => write(param, event.currentTarget.value)}
            />
          </Field>
        ))}
      </div>
    </details>
  );
}
