// The tracker part of a subdomain's settings: the site origins its tracker may run on
// (tracker_origins), one per line. The server checks and canonicalises them (lower case,
// no default port); a refused line is said on the field with its number.
import { ApiError } from '../api/client.js';
import type { Translate } from '../app/i18n.js';
import { Field } from '../app/ui.js';

/** The origins written in the box: one per line, blank lines dropped. */
export const originsOf = (text: string): string[] =>
  text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');

/** The box's text for stored origins. */
export const originsText = (origins: readonly string[]): string => origins.join('\n');

export const sameOrigins = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((origin, index) => origin === b[index]);

/** The refusal of the list said in the viewer's language: which line (from 1), or the list's size. */
export function originsError(t: Translate, error: unknown, written: string[]): string | undefined {
  if (!(error instanceof ApiError) || error.code !== 'validation_error') return undefined;
  const key = Object.keys(error.details).find((field) => field === 'tracker_origins' || field.startsWith('tracker_origins.'));
  if (key === undefined) return undefined;
  const index = Number(key.slice('tracker_origins.'.length));
  if (key === 'tracker_origins' || !Number.isInteger(index)) return t('subdomains.error.tracker_origins_count');
  return t('subdomains.error.tracker_origin', { line: index + 1, origin: written[index] ?? '' });
}

export function TrackerOriginsField({ t, value, error, onInput }: { t: Translate; value: string; error: string | undefined; onInput: (text: string) => void }) {
  const id = 'settings-tracker-origins';
  return (
    <fieldset>
      <legend>{t('subdomains.settings.group_tracker')}</legend>
      <Field id={id} label={t('subdomains.field.tracker_origins')} hint={t('subdomains.help.tracker_origins')} error={error}>
        <textarea
          id={id}
          name="tracker_origins"
          rows={3}
          autocomplete="off"
          autocapitalize="off"
          spellcheck={false}
          placeholder="https://example.org"
          value={value}
          aria-invalid={error ? 'true' : undefined}
          aria-describedby={[`${id}-hint`, error ? `${id}-error` : ''].filter(Boolean).join(' ')}
          onInput={(event) => onInput(event.currentTarget.value)}
        />
      </Field>
    </fieldset>
  );
}
