// The dashboard speaks from the platform's one catalogue (shared/i18n/ui, which the server's
// catalogue includes too). The language: the one picked in the dashboard (remembered in this
// browser), else the browser's Accept-Language order, else English.
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import { UI_MESSAGES, type UiKey, type UiLocale } from '#shared/i18n/ui/index.js';

export type { UiKey, UiLocale };
export const LOCALES: { code: UiLocale; native: string }[] = [
  { code: 'en', native: 'English' },
  { code: 'de', native: 'Deutsch' },
  { code: 'fr', native: 'Français' },
  { code: 'es', native: 'Español' },
];
const STORAGE_KEY = 'linktrack.lang';

const isLocale = (value: string | null | undefined): value is UiLocale => LOCALES.some((locale) => locale.code === value);

/** The language to start in: the remembered pick, then the browser's languages, then English. */
export function initialLocale(): UiLocale {
  try {
    const stored = localStorage.getItem(STORAGE_KEY);
    if (isLocale(stored)) return stored;
  } catch {
    // Storage refused (private mode, policy): the browser's languages decide.
  }
  for (const tag of navigator.languages ?? [navigator.language]) {
    const primary = tag.toLowerCase().split(/[-_]/)[0];
    if (isLocale(primary)) return primary;
  }
  return 'en';
}

export function rememberLocale(locale: UiLocale): void {
  try {
    localStorage.setItem(STORAGE_KEY, locale);
  } catch {
    // Not remembered; the pick still applies to this page.
  }
}

export type Translate = (key: UiKey, params?: Record<string, string | number>) => string;

/** Translates with one locale's messages, filling `{name}` slots. */
export function translator(locale: UiLocale): Translate {
  const messages = UI_MESSAGES[locale];
  return (key, params = {}) =>
    (messages[key] ?? UI_MESSAGES.en[key] ?? key).replace(/\{(\w+)\}/g, (whole, name: string) => (name in params ? String(params[name]) : whole));
}

export interface I18n {
  locale: UiLocale;
  t: Translate;
  setLocale: (locale: UiLocale) => void;
}

export const I18nContext = createContext<I18n>({ locale: 'en', t: translator('en'), setLocale: () => undefined });

/** The current language and its translate function. */
export function useI18n(): I18n {
  return useContext(I18nContext);
}
