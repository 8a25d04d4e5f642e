import Negotiator from 'negotiator';
import { z } from 'zod';
import { de } from './locales/de.js';
import { en } from './locales/en.js';
import { es } from './locales/es.js';
import { fr } from './locales/fr.js';
/** Supported locales with their catalogues, native names and zod rule messages. */
export const LOCALES = {
    en: { name: 'English', native: 'English', messages: en, zod: z.locales.en },
    de: { name: 'German', native: 'Deutsch', messages: de, zod: z.locales.de },
    fr: { name: 'French', native: 'Français', messages: fr, zod: z.locales.fr },
    es: { name: 'Spanish', native: 'Español', messages: es, zod: z.locales.es },
};
export const DEFAULT_LOCALE = 'en';
export const LOCALE_CODES = Object.keys(LOCALES);
/** A BCP 47-shaped language tag, as accepted by `?lang=`. */
export const LANG_TAG = /^[A-Za-z]{2,8}(?:[-_][A-Za-z0-9]{1,8})*$/;
/** Maps a language tag such as `de-AT` to a supported locale, or undefined. */
export function matchLocale(tag) {
    const primary = tag.toLowerCase().split(/[-_]/)[0] ?? '';
    return LOCALE_CODES.includes(primary) ? primary : undefined;
}
/** Picks the locale: a supported `?lang=` first, then Accept-Language, then English. */
export function negotiateLocale(lang, acceptLanguage) {
    const fromQuery = lang ? matchLocale(lang) : undefined;
    if (fromQuery)
        return fromQuery;
    if (acceptLanguage) {
        for (const tag of new Negotiator({ headers: { 'accept-language': acceptLanguage } }).languages()) {
            const locale = matchLocale(tag);
            if (locale)
                return locale;
        }
    }
    return DEFAULT_LOCALE;
}
/** Translates one catalogue key, filling its `{name}` slots from params. */
export function t(locale, key, params = {}) {
    const template = LOCALES[locale].messages[key] ?? en[key];
    return template.replace(/\{(\w+)\}/g, (whole, name) => (name in params ? String(params[name]) : whole));
}
const zodErrorMaps = new Map();
/** Zod's own localised rule messages for one locale, used for `validation_error` details. */
export function zodErrorMap(locale) {
    let map = zodErrorMaps.get(locale);
    if (!map) {
        map = LOCALES[locale].zod().localeError;
        zodErrorMaps.set(locale, map);
    }
    return map;
}
//# sourceMappingURL=index.js.map