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
  en: { name: 'English', native: 'English', messages: { ...(en as Catalogue), ...UI_MESSAGES.en } as Messages, zod: z.locales.en },
  de: { name: 'German', native: 'Deutsch', messages: { ...de, ...UI_MESSAGES.de } as Messages, zod: z.locales.de },
  fr: { name: 'French', native: 'Français', messages: { ...fr, ...UI_MESSAGES.fr } as Messages, zod: z.locales.fr },
  es: { name: 'Spanish', native: 'Español', messages: { ...es, ...UI_MESSAGES.es } as Messages, zod: z.locales.es },
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
