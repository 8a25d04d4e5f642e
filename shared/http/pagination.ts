import { z } from 'zod';
import { MetaSchema } from './envelope.js';
import { integerParam } from './fields.js';

/** Largest `limit` of any collection. */
const MAX_PAGE_SIZE = 200;
/** `limit` when none is given (the spec's example page size). */
const DEFAULT_PAGE_SIZE = 50;

/** How collections page, for OpenAPI descriptions. */
export const PAGINATION_NOTE =
  'Collections sit under `data.<name>`; `meta` (PageMeta) carries `count` (items in this page), `total` (items matching), `limit`, ' +
  "`cursor` (this page's), `next_cursor` and `has_more`. Ask for the next page with `?cursor=<next_cursor>`: a walk covers " +
  'the items that existed when it started exactly once, newest first, whatever is created meanwhile. `?page=<n>` (1-based, ' +
  'with `limit`) addresses pages by number for human tables, and adds `meta.page`; with `page`, a `cursor` is ignored. Cursors are ' +
  'opaque, but every value of the documented pattern is a position: a cursor past the end gives an empty page, never an error.';

/**
 * A cursor parameter: the pattern is exact (every value it admits is a position the list can start
 * after), so a client generated from the document never sends a cursor the server refuses.
 */
export function cursorParam(pattern: RegExp) {
  return z.string().regex(pattern, 'is not a cursor of this list').optional().meta({ description: 'The `next_cursor` of the previous page.' });
}

/** Cursors of lists keyed by a bigint `seq` (links, notifications, deliveries…): a version tag and the position (below 2^63). */
const SEQ_CURSOR = /^s1\.(?:0|[1-9][0-9]{0,17})$/;

/** Query parameters every paged collection takes. */
export const pagingQuery = {
  limit: integerParam(1, MAX_PAGE_SIZE)
    .default(DEFAULT_PAGE_SIZE)
    .meta({ description: `Page size, 1 to ${MAX_PAGE_SIZE}; default ${DEFAULT_PAGE_SIZE}.` }),
  cursor: cursorParam(SEQ_CURSOR),
  page: integerParam(1, 100_000).optional().meta({ description: 'Page number (1-based) for human tables; a `cursor` given with it is ignored.' }),
};

/**
 * The `meta` of a collection's page, as the document declares it (each list route's `meta`), so that
 * generated clients type the pagination fields: Meta plus the spec's paging fields (PageMeta below).
 */
export const PageMetaSchema = MetaSchema.extend({
  count: z.number().int().min(0).meta({ description: 'Items in this page.' }),
  total: z.number().int().min(0).meta({ description: 'Items matching the query, over every page.' }),
  limit: z.number().int().min(1).meta({ description: 'The page size applied.' }),
  cursor: z.string().nullable().meta({ description: "This page's cursor (the `cursor` asked for); null for the first page or a page asked by number." }),
  next_cursor: z.string().nullable().meta({ description: 'The cursor of the next page (`?cursor=`); null on the last page.' }),
  has_more: z.boolean().meta({ description: 'Whether another page follows: exactly `next_cursor` is not null.' }),
  page: z.number().int().min(1).optional().meta({ description: 'The page number, when the page was asked by `?page=`.' }),
}).meta({ id: 'PageMeta' });

/** How a request addresses a page: its size, and a cursor or a page number (not both). */
export type Paging = { limit: number; cursor?: string; page?: number };

/** The spec's pagination meta, plus `page` when the page was addressed by number. */
type PageMeta = {
  count: number;
  total: number;
  limit: number;
  cursor: string | null;
  next_cursor: string | null;
  has_more: boolean;
  page?: number;
};

function encodeSeqCursor(seq: string): string {
  return `s1.${seq}`;
}

/** The `seq` of a cursor the query schema admitted (SEQ_CURSOR). */
export function decodeSeqCursor(cursor: string): string {
  return cursor.slice('s1.'.length);
}

/** Where a page of rows keyed by `seq` starts: after the cursor's seq, or at the page number's offset. */
export type SeqPageAt = { afterSeq?: string } | { offset: number };

export function seqPageAt(paging: Paging): SeqPageAt {
  return paging.page !== undefined ? { offset: (paging.page - 1) * paging.limit } : { afterSeq: paging.cursor ? decodeSeqCursor(paging.cursor) : undefined };
}

/**
 * A page of rows keyed by `seq` and the spec's meta: `list` is asked for one row more than the page
 * (to know whether another follows) from where the page starts, `count` for the total.
 */
export async function seqPage<Row extends { seq: string }>(
  paging: Paging,
  list: (limit: number, at: SeqPageAt) => Promise<Row[]>,
  count: () => Promise<number>,
) {
  const [rows, total] = await Promise.all([list(paging.limit + 1, seqPageAt(paging)), count()]);
  const items = rows.slice(0, paging.limit);
  return { items, meta: seqPageMeta(items, total, rows.length > paging.limit, paging) };
}

/** The spec's pagination meta of a page of rows keyed by `seq`, with `page` when addressed by number. */
export function seqPageMeta(items: { seq: string }[], total: number, hasMore: boolean, paging: Paging): PageMeta {
  return collectionMeta(items.length, total, paging, hasMore ? encodeSeqCursor(items.at(-1)!.seq) : null);
}

/** The spec's pagination meta of a page of `count` items, whatever its cursors are made of. */
export function collectionMeta(count: number, total: number, paging: Paging, nextCursor: string | null): PageMeta {
  const meta: PageMeta = {
    count,
    total,
    limit: paging.limit,
    cursor: paging.cursor ?? null,
    next_cursor: nextCursor,
    has_more: nextCursor !== null,
  };
  if (paging.page !== undefined) meta.page = paging.page;
  return meta;
}

/** The paging a collection's query asks for: a page number wins over a cursor (documented on `page`). */
export function pagingOf(query: { limit: number; cursor?: string; page?: number }): Paging {
  return query.page !== undefined ? { limit: query.limit, page: query.page } : { limit: query.limit, cursor: query.cursor };
}

/**
 * Cursors of the small per-account collections read whole (tokens, webhooks: at most a few dozen):
 * the creation time (ms) and id of the last item, newest first. Every value of the pattern is a
 * position, so a walk goes on whatever was revoked or deleted meanwhile.
 */
export const TIME_CURSOR = /^t1\.[0-9]{1,15}\.[0-9a-f-]{1,36}$/;
/** Cursors of a collection read whole in name order (subdomains): the last name. */
export const NAME_CURSOR = /^n1\.[a-z0-9-]{1,63}$/;
/** Cursors of a collection of host names read whole in order (custom domains): the last one. */
export const DOMAIN_CURSOR = /^d1\.[a-z0-9.-]{1,253}$/;

/**
 * One page of a collection read whole and sorted: from the page number's offset, or after the cursor
 * (the first item `after(item, cursor)` holds for; none: past the end), with the next cursor and meta.
 */
function pageOfSorted<T>(sorted: T[], paging: Paging, after: (item: T, cursor: string) => boolean, cursorOf: (item: T) => string) {
  let start = 0;
  if (paging.page !== undefined) start = (paging.page - 1) * paging.limit;
  else if (paging.cursor) {
    const cursor = paging.cursor;
    start = sorted.findIndex((item) => after(item, cursor));
    if (start < 0) start = sorted.length;
  }
  const items = sorted.slice(start, start + paging.limit);
  const last = items.at(-1);
  const next = start + paging.limit < sorted.length && last !== undefined ? cursorOf(last) : null;
  return { items, meta: collectionMeta(items.length, sorted.length, paging, next) };
}

/** One page of a collection read whole, newest first by creation time then id (TIME_CURSOR), and its meta. */
export function pageByTime<T extends { id: string; created_at: string }>(all: T[], paging: Paging) {
  const keyed = all.map((item) => ({ item, ms: Date.parse(item.created_at) }));
  const before = (a: { ms: number; id: string }, b: { ms: number; id: string }) => a.ms < b.ms || (a.ms === b.ms && a.id < b.id);
  keyed.sort((a, b) => (before({ ms: a.ms, id: a.item.id }, { ms: b.ms, id: b.item.id }) ? 1 : a.ms === b.ms && a.item.id === b.item.id ? 0 : -1));
  const page = pageOfSorted(
    keyed,
    paging,
    (entry, cursor) => {
      const [, ms, id] = cursor.split('.') as [string, string, string];
      return before({ ms: entry.ms, id: entry.item.id }, { ms: Number(ms), id });
    },
    (entry) => `t1.${entry.ms}.${entry.item.id}`,
  );
  return { items: page.items.map((entry) => entry.item), meta: page.meta };
}

/** One page of a collection read whole, in name order (NAME_CURSOR), and its meta. */
export function pageByName<T extends { name: string }>(all: T[], paging: Paging) {
  const sorted = [...all].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return pageOfSorted(
    sorted,
    paging,
    (item, cursor) => item.name > cursor.slice('n1.'.length),
    (item) => `n1.${item.name}`,
  );
}

/** One page of a collection read whole, in domain order (DOMAIN_CURSOR), and its meta. */
export function pageByDomain<T extends { domain: string }>(all: T[], paging: Paging) {
  const sorted = [...all].sort((a, b) => (a.domain < b.domain ? -1 : a.domain > b.domain ? 1 : 0));
  return pageOfSorted(
    sorted,
    paging,
    (item, cursor) => item.domain > cursor.slice('d1.'.length),
    (item) => `d1.${item.domain}`,
  );
}
