// Numbers and dates in the viewer's language and time zone (the browser's own zone).
import type { UiLocale } from './i18n.js';
import type { paths } from '../api/schema.generated';
import { isTimeZone } from '#shared/time.js';
import { currentZoneName } from './time-zones.js';

const dateTimeFormats = new Map<string, Intl.DateTimeFormat>();

/** A date and time in the viewer's zone, e.g. "25 Nov 2026, 07:14:22". */
export function formatDateTime(locale: UiLocale, iso: string | null | undefined, withSeconds = false): string {
  if (!iso) return '—';
  const key = `${locale}|${withSeconds}`;
  let format = dateTimeFormats.get(key);
  if (!format) {
    format = new Intl.DateTimeFormat(locale, { dateStyle: 'medium', timeStyle: withSeconds ? 'medium' : 'short' });
    dateTimeFormats.set(key, format);
  }
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : format.format(date);
}

/** A date alone in the viewer's zone. */
export function formatDate(locale: UiLocale, iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : new Intl.DateTimeFormat(locale, { dateStyle: 'medium' }).format(date);
}

const numberFormats = new Map<string, Intl.NumberFormat>();

/** An integer with the language's grouping. */
export function formatNumber(locale: UiLocale, value: number | null | undefined): string {
  if (value === null || value === undefined) return '—';
  let format = numberFormats.get(locale);
  if (!format) {
    format = new Intl.NumberFormat(locale);
    numberFormats.set(locale, format);
  }
  return format.format(value);
}

/** The viewer's IANA time zone (what the statistics pickers start with). */
export function viewerTimeZone(): ReportZone {
  // By its current name: the browser says Asia/Calcutta for a viewer in Kolkata.
  return reportZone(currentZoneName(Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC'));
}

/** A time zone reports take (the API's `tz` enum: the canonical IANA names and UTC). */
export type ReportZone = NonNullable<NonNullable<paths['/api/v1/stats/{scope}/{id}']['get']['parameters']['query']>['tz']>;

/** The zone if this browser knows it (the API offers every name its runtime and ClickHouse share), else UTC. */
export function reportZone(tz: string): ReportZone {
  return (isTimeZone(tz) ? tz : 'UTC') as ReportZone;
}

/**
 * A wait in the viewer's language, e.g. "in 15 minutes", "dans 30 secondes": whole minutes from a
 * minute up, rounded up (never promising less than the wait), seconds below that.
 */
export function formatWait(locale: UiLocale, seconds: number): string {
  const format = new Intl.RelativeTimeFormat(locale, { numeric: 'always' });
  return seconds >= 60 ? format.format(Math.ceil(seconds / 60), 'minute') : format.format(Math.max(1, seconds), 'second');
}

const tickFormats = new Map<string, Intl.DateTimeFormat>();

/** One cached formatter per language, zone and shape. */
function tickFormat(locale: UiLocale, tz: string, shape: 'time' | 'day' | 'month' | 'date'): Intl.DateTimeFormat {
  const key = `${locale}|${tz}|${shape}`;
  let format = tickFormats.get(key);
  if (!format) {
    const options: Record<typeof shape, Intl.DateTimeFormatOptions> = {
      time: { hour: 'numeric', minute: '2-digit' },
      day: { day: 'numeric', month: 'short' },
      month: { month: 'short', year: 'numeric' },
      date: { year: 'numeric', month: '2-digit', day: '2-digit' },
    };
    format = new Intl.DateTimeFormat(locale, { ...options[shape], timeZone: tz });
    tickFormats.set(key, format);
  }
  return format;
}

/**
 * The labels of a time axis (ticks in seconds, `step` seconds apart) in the viewer's language and
 * the report's zone: times for ticks under a day apart, with the day above the first tick of each
 * day; day and month for ticks days apart ("21. Nov." in German, "Nov 21" in English); month and
 * year from four weeks apart.
 */
export function formatTimeTicks(locale: UiLocale, tz: string, ticks: number[], step: number): string[] {
  const at = (seconds: number) => new Date(seconds * 1000);
  if (step >= 28 * 86_400) return ticks.map((tick) => tickFormat(locale, tz, 'month').format(at(tick)));
  if (step >= 86_400) return ticks.map((tick) => tickFormat(locale, tz, 'day').format(at(tick)));
  const dayOf = (tick: number) => tickFormat(locale, tz, 'date').format(at(tick));
  return ticks.map((tick, index) => {
    const time = tickFormat(locale, tz, 'time').format(at(tick));
    const newDay = index === 0 || dayOf(tick) !== dayOf(ticks[index - 1]!);
    return newDay ? `${tickFormat(locale, tz, 'day').format(at(tick))}\n${time}` : time;
  });
}

/**
 * The end of a validity as it was chosen: a "valid through" day is stored as the midnight after
 * it, so an end at midnight in the viewer's zone is shown as the day before (through 31 Jan, not
 * 1 Feb); any other end as its date and time.
 */
export function formatValidThrough(locale: UiLocale, iso: string | null | undefined): string {
  if (!iso) return '—';
  const end = new Date(iso);
  if (Number.isNaN(end.getTime())) return iso;
  const midnight = end.getHours() === 0 && end.getMinutes() === 0 && end.getSeconds() === 0 && end.getMilliseconds() === 0;
  return midnight ? formatDate(locale, new Date(end.getTime() - 1).toISOString()) : formatDateTime(locale, iso);
}
