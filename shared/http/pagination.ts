import { z } from 'zod';

/** Largest `limit` of any collection. */
export const MAX_PAGE_SIZE = 200;
/** `limit` when none is given (the spec's example page size). */
export const DEFAULT_PAGE_SIZE = 50;

/** How collections page, for OpenAPI descriptions. */
export const PAGINATION_NOTE =
  'Collections sit under `data.<name>`; `meta` carries `count` (items in this page), `total` (items matching), `limit`, ' +
  '`cursor` (this page\'s), `next_cursor` and `has_more`. Ask for the next page with `?cursor=<next_cursor>`: a walk covers ' +
  'the items that existed when it started exactly once, newest first, whatever is created meanwhile. `?page=<n>` (1-based, ' +
  'with `limit`) addresses pages by number for human tables, and adds `meta.page`.';

/** Query parameters every paged collection takes. */
export const pagingQuery = {
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_PAGE_SIZE)
    .default(DEFAULT_PAGE_SIZE)
    .meta({ description: `Page size, 1 to ${MAX_PAGE_SIZE}; default ${DEFAULT_PAGE_SIZE}.` }),
  cursor: z.string().max(200).optional().meta({ description: 'The `next_cursor` of the previous page.' }),
  page: z.coerce
    .number()
    .int()
    .min(1)
    .max(100_000)
    .optional()
    .meta({ description: 'Page number (1-based) for human tables; not with `cursor`.' }),
};
