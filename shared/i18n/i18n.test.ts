import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../errors.js';
import { LOCALES, LOCALE_CODES, matchLocale, negotiateLocale, rule, t, translateRule, translateRules, type RuleName } from './index.js';

/** The whole English catalogue: the API's messages and the user interface's. */
const en = LOCALES.en.messages;

describe('catalogues', () => {
  it('ship English, German, French and Spanish', () => {
    expect(LOCALE_CODES).toEqual(['en', 'de', 'fr', 'es']);
  });

  it.each(LOCALE_CODES)('%s has exactly the keys of the English catalogue, none empty', (locale) => {
    const messages = LOCALES[locale].messages;
    expect(Object.keys(messages).sort()).toEqual(Object.keys(en).sort());
    for (const [key, text] of Object.entries(messages)) expect(text.trim(), key).not.toBe('');
  });

  it.each(LOCALE_CODES)('%s keeps every {name} slot of the English text', (locale) => {
    for (const [key, english] of Object.entries(en)) {
      const slots = (text: string) => [...text.matchAll(/\{(\w+)\}/g)].map((match) => match[1]).sort();
      expect(slots(LOCALES[locale].messages[key as keyof typeof en]), `${locale} ${key}`).toEqual(slots(english));
    }
  });

  it('has a message for every error code', () => {
    for (const code of ERROR_CODES) expect(en[`error.${code}`]).toBeTruthy();
  });

  it('non-English catalogues are translations, not copies', () => {
    // A few words are the same in every language ("Webhooks", "Bots", the product's name): at most
    // one message in ten may equal its English text.
    for (const locale of ['de', 'fr', 'es'] as const) {
      const same = Object.entries(LOCALES[locale].messages).filter(([key, text]) => text === en[key as keyof typeof en]);
      expect(same.length, `${locale} copies ${same.map(([key]) => key).join(', ')}`).toBeLessThanOrEqual(Math.ceil(Object.keys(en).length / 10));
    }
  });
});

describe('t', () => {
  it('fills {name} slots and leaves unknown ones visible', () => {
    expect(t('en', 'error.rate_limited.retry', { seconds: 30 })).toBe('Too many requests. Try again in 30 seconds.');
    expect(t('de', 'page.title', { status: 404 })).toBe('Fehler 404');
    expect(t('en', 'page.title')).toBe('Error {status}');
  });
});

describe('negotiateLocale', () => {
  it('prefers ?lang=, then Accept-Language by quality, then English', () => {
    expect(negotiateLocale('de', 'fr')).toBe('de');
    expect(negotiateLocale('de-AT', undefined)).toBe('de');
    expect(negotiateLocale(undefined, 'ja, es;q=0.5, fr;q=0.9')).toBe('fr');
    expect(negotiateLocale('ja', 'es')).toBe('es');
    expect(negotiateLocale(undefined, 'ja')).toBe('en');
    expect(negotiateLocale(undefined, undefined)).toBe('en');
  });

  it('matches primary subtags case-insensitively', () => {
    expect(matchLocale('FR-ca')).toBe('fr');
    expect(matchLocale('es_MX')).toBe('es');
    expect(matchLocale('pt')).toBeUndefined();
  });
});

// Guards issue 23: custom rule messages (zod refinements, services' validation_error details) stayed English.
describe('validation rules', () => {
  const names = Object.keys(en)
    .filter((key) => key.startsWith('rule.'))
    .map((key) => key.slice('rule.'.length) as RuleName);
  /** Sample values for every slot: digits, and text with spaces and parentheses. */
  const sample = (name: RuleName) =>
    Object.fromEntries([...en[`rule.${name}`].matchAll(/\{(\w+)\}/g)].map((match, index) => [match[1]!, index % 2 ? 'a (b) c' : 2048]));

  it.each(['de', 'fr', 'es'] as const)('every rule, written in English by rule(), reads in %s with its values', (locale) => {
    for (const name of names) {
      const params = sample(name);
      expect(translateRule(locale, rule(name, params)), name).toBe(t(locale, `rule.${name}`, params));
    }
  });

  it('leaves English as it is, and any text that is no rule of the catalogue', () => {
    expect(translateRule('en', rule('lang_tag'))).toBe('must be a language tag such as en, de or fr-CA');
    expect(translateRule('de', 'Zu groß: erwartet, dass number <=100')).toBe('Zu groß: erwartet, dass number <=100');
    expect(translateRules('fr', { slug: rule('reserved'), count: 3 })).toEqual({ slug: 'est réservé', count: 3 });
  });

  it('tells rules with slots apart from the exact ones', () => {
    expect(translateRule('de', rule('url_unresolved', { host: 'x.example' }))).toBe('Host x.example lässt sich nicht auflösen');
    expect(translateRule('de', rule('url_unresolved_because', { host: 'x.example', reason: 'ENOTFOUND' }))).toBe(
      'Host x.example lässt sich nicht auflösen (ENOTFOUND)',
    );
  });
});
