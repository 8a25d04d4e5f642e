import Negotiator from 'negotiator';
import { z } from 'zod';
import { de } from './locales/de.js';
import { en, type Catalogue, type MessageKey as ApiMessageKey } from './locales/en.js';
import { es } from './locales/es.js';
import { fr } from './locales/fr.js';
import { UI_MESSAGES, type UiKey } from './ui/index.js';

/** A message of the catalogue: the API's (errors, error pages) and the user interface's. */
export type MessageKey = ApiMessageKey | UiKey;
type Messages = Record<MessageKey, string>;

/** Supported locales with their catalogues, native names and zod rule messages. */
export const LOCALES = {
  en: { name: 'English', native: 'English', messages: { ...(en as Catalogue), ...UI_MESSAGES.en } satisfies Messages, zod: z.locales.en },
  de: { name: 'German', native: 'Deutsch', messages: { ...de, ...UI_MESSAGES.de } satisfies Messages, zod: z.locales.de },
  fr: { name: 'French', native: 'Français', messages: { ...fr, ...UI_MESSAGES.fr } satisfies Messages, zod: z.locales.fr },
  es: { name: 'Spanish', native: 'Español', messages: { ...es, ...UI_MESSAGES.es } satisfies Messages, zod: z.locales.es },
} as const;

export type Locale = keyof typeof LOCALES;
export const DEFAULT_LOCALE: Locale = 'en';
export const LOCALE_CODES = Object.keys(LOCALES) as Locale[];

/** A BCP 47-shaped language tag, as accepted by `?lang=`. */
export const LANG_TAG = /^[A-Za-z]{2,8}(?:[-_][A-Za-z0-9]{1,8})*$/;

/** Maps a language tag such as `de-AT` to a supported locale, or undefined. */
export function matchLocale(tag: string): Locale | undefined {
  const primary = tag.toLowerCase().split(/[-_]/)[0] ?? '';
  return (LOCALE_CODES as string[]).includes(primary) ? (primary as Locale) : undefined;
}

/** Picks the locale: a supported `?lang=` first, then Accept-Language, then English. */
export function negotiateLocale(lang: string | undefined, acceptLanguage: string | undefined): Locale {
  const fromQuery = lang ? matchLocale(lang) : undefined;
  if (fromQuery) return fromQuery;
  if (acceptLanguage) {
    for (const tag of new Negotiator({ headers: { 'accept-language': acceptLanguage } }).languages()) {
      const locale = matchLocale(tag);
      if (locale) return locale;
    }
  }
  return DEFAULT_LOCALE;
}

/** Translates one catalogue key, filling its `{name}` slots from params. */
export function t(locale: Locale, key: MessageKey, params: Record<string, string | number> = {}): string {
  const template = LOCALES[locale].messages[key] ?? LOCALES.en.messages[key];
  return template.replace(/\{(\w+)\}/g, (whole, name: string) => (name in params ? String(params[name]) : whole));
}

const zodErrorMaps = new Map<Locale, z.core.$ZodErrorMap>();

/** Zod's own localised rule messages for one locale, used for `validation_error` details. */
export function zodErrorMap(locale: Locale): z.core.$ZodErrorMap {
  let map = zodErrorMaps.get(locale);
  if (!map) {
    map = LOCALES[locale].zod().localeError;
    zodErrorMaps.set(locale, map);
  }
  return map;
}

/** The name of a validation rule of the catalogue (`rule.<name>`). */
export type RuleName = ApiMessageKey extends infer K ? (K extends `rule.${infer Name}` ? Name : never) : never;

/**
 * The English text of a validation rule: what a schema or a service names a rule with (zod
 * messages, `details` of validation_error). It stays English wherever it goes (logs, dead letters);
 * an answer translates it into the caller's language (translateRules).
 */
export function rule(name: RuleName, params: Record<string, string | number> = {}): string {
  return t('en', `rule.${name}`, params);
}

type RuleMatcher = { key: MessageKey; pattern: RegExp; slots: string[] };
let ruleIndex: { exact: Map<string, MessageKey>; templates: RuleMatcher[] } | undefined;

/**
 * English rule texts back to their keys: exact texts by map; texts with `{slots}` by a pattern each,
 * the longest template first so that the most specific one wins.
 */
function rules() {
  if (ruleIndex) return ruleIndex;
  const exact = new Map<string, MessageKey>();
  const templates: RuleMatcher[] = [];
  for (const [key, text] of Object.entries(en)) {
    if (!key.startsWith('rule.')) continue;
    const slots = [...text.matchAll(/\{(\w+)\}/g)].map((match) => match[1]!);
    if (slots.length === 0) {
      exact.set(text, key as MessageKey);
      continue;
    }
    const source = text
      .split(/\{\w+\}/)
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('(.+?)');
    templates.push({ key: key as MessageKey, pattern: new RegExp(`^${source}$`, 's'), slots });
  }
  templates.sort((a, b) => b.pattern.source.length - a.pattern.source.length);
  return (ruleIndex = { exact, templates });
}

/** One rule text in `locale`: a rule of the catalogue translated (its values kept), any other text as it is. */
export function translateRule(locale: Locale, text: string): string {
  if (locale === DEFAULT_LOCALE) return text;
  const { exact, templates } = rules();
  const key = exact.get(text);
  if (key) return t(locale, key);
  for (const { key: templateKey, pattern, slots } of templates) {
    const match = pattern.exec(text);
    if (match) return t(locale, templateKey, Object.fromEntries(slots.map((slot, index) => [slot, match[index + 1]!])));
  }
  return text;
}

/**
 * An error's `details` in `locale`: each field's rule (of a validation_error, a conflict) translated
 * when it is one of the catalogue's; other values as they are (zod's own rule messages come
 * localised already, through zodErrorMap).
 */
export function translateRules(locale: Locale, details: Record<string, unknown>): Record<string, unknown> {
  if (locale === DEFAULT_LOCALE) return details;
  return Object.fromEntries(Object.entries(details).map(([field, text]) => [field, typeof text === 'string' ? translateRule(locale, text) : text]));
}
