// Pieces the visits and attacks pages share: reading list filters from the URL query and writing
// them back, the viewer's local time in a datetime-local field, and the cells both tables show.
// Everything a visitor sent (user agent, referrer, path) is rendered as text.
import { useLocation } from 'preact-iso';
import { reachableSubdomains, type Schemas } from '../api/client.js';
import { useI18n, type Translate, type UiKey } from '../app/i18n.js';
import { useLoad } from '../app/ui.js';
import './visits.css';

/** A visit as the owner's list answers it (another owner's public list answers fewer columns). */
export type VisitRow = Partial<Schemas['Visit']> & { ts: string; kind: Schemas['Visit']['kind'] };

export const VISIT_KINDS = ['visit', 'bot', 'attack', 'beacon'] as const;
export const PAGE_SIZES = [25, 50, 100, 200];
export const DEFAULT_PAGE_SIZE = 50;

/** The query of the current URL as a string (`a=1&b=2`), to key loads on: preact-iso parses it into an object. */
export function useQueryKey(): { query: Record<string, string>; key: string; path: string; route: (url: string, replace?: boolean) => void } {
  const { query, path, route } = useLocation();
  const key = new URLSearchParams(Object.entries(query).filter(([, value]) => value !== '')).toString();
  return { query, key, path, route };
}

/** A page size from the URL: 1 to 200, else the default. */
export function pageSizeOf(value: string | undefined): number {
  const size = Number(value);
  return Number.isInteger(size) && size >= 1 && size <= 200 ? size : DEFAULT_PAGE_SIZE;
}

/** `path?a=1` with the empty values left out. */
export function urlWith(path: string, values: Record<string, string | undefined>): string {
  const search = new URLSearchParams(Object.entries(values).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== '')).toString();
  return search ? `${path}?${search}` : path;
}

const pad = (value: number) => String(value).padStart(2, '0');

/** An ISO instant as a datetime-local value in the viewer's zone (what the field shows). */
export function localInputOf(iso: string | undefined): string {
  if (!iso) return '';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '';
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

/** A datetime-local value (the viewer's zone) as an ISO instant, or undefined when empty or not a time. */
export function isoOfLocalInput(value: string): string | undefined {
  if (!value) return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

/** The caller's subdomains, for the subdomain filter (the filter still works while they load or if they fail). */
export function useSubdomainNames(): string[] {
  const loaded = useLoad(async (signal) => (await reachableSubdomains(signal)).subdomains.map((subdomain) => subdomain.name), []);
  return loaded.state === 'ready' ? loaded.data : [];
}

/** The subdomain filter: every subdomain of the caller, plus the one in the URL if it is another. */
export function SubdomainSelect({ id, value, names, onChange }: { id: string; value: string; names: string[]; onChange: (value: string) => void }) {
  const { t } = useI18n();
  const options = value && !names.includes(value) ? [value, ...names] : names;
  return (
    <select id={id} value={value} onChange={(event) => onChange(event.currentTarget.value)}>
      <option value="">{t('visits.filter.any_subdomain')}</option>
      {options.map((name) => (
        <option key={name} value={name}>
          {name}
        </option>
      ))}
    </select>
  );
}

/** A user agent, folded away (they are long): the text as the visitor sent it. */
export function UserAgent({ value }: { value: string | undefined }) {
  const { t } = useI18n();
  if (!value) return <span class="muted">—</span>;
  return (
    <details class="user-agent">
      <summary>{t('visits.show_user_agent')}</summary>
      <code>{value}</code>
    </details>
  );
}

/** The public address, and the LAN address under it when the visitor consented to share it. */
export function Addresses({ visit }: { visit: VisitRow }) {
  const { t } = useI18n();
  return (
    <>
      <span class="mono">{visit.ip_public || '—'}</span>
      {visit.ip_lan ? <span class="mono muted cell-line">{t('visits.lan_ip', { ip: visit.ip_lan })}</span> : null}
    </>
  );
}

const ATTACK_TYPES = new Set(['scanner', 'traversal', 'sqli', 'xss']);

/** The kind of an attack attempt in the viewer's words (a kind this page does not know yet: "Other"). */
export function attackTypeLabel(t: Translate, type: string | undefined): string {
  return t(ATTACK_TYPES.has(type ?? '') ? (`attacks.type.${type}` as UiKey) : 'attacks.type.unknown');
}
