import type { RedirectRule, Variant } from './rules.js';
import { sql, type Kysely, type Selectable, type SelectQueryBuilder } from 'kysely';
import type { DB, LinksTable } from '../db/schema.js';
import { REDIRECT_LINK_COLUMNS } from './link-notices.js';
import { PUBLIC_LINK_COLUMNS, type PublicLinkColumn } from '../policy/policy.js';
import { pageBySeq } from '../db/paging.js';
import type { SeqPageAt } from '../http/pagination.js';

export type LinkRow = Selectable<LinksTable>;

export interface NewLink {
  id: string;
  ownerId: string;
  subdomain: string;
  slug: string;
  targetUrl: string;
  title: string | null;
  tags: string[];
  expiresAt: Date | null;
  maxVisits: number | null;
  redirectType: number;
  appendVisitId: boolean;
  clientId: string | null;
  clientBodyHash: string | null;
  /** Issue 40: where the link redirects once expired or exhausted. */
  fallbackUrl?: string | null;
  /** Issue 40: the scrypt hash of the link's password. */
  passwordHash?: string | null;
  /** The creation time, when it is not now (an imported link keeps its source's). */
  createdAt?: Date;
  // Issue 40: routing (shared/links/rules.ts); absent is none.
  rules?: RedirectRule[] | null;
  variants?: Variant[] | null;
  forwardQuery?: boolean;
}

export interface LinkChanges {
  slug?: string;
  target_url?: string;
  title?: string | null;
  tags?: string[];
  expires_at?: Date | null;
  max_visits?: number | null;
  redirect_type?: number;
  append_visit_id?: boolean;
  fallback_url?: string | null;
  password_hash?: string | null;
  // Issue 40: routing (shared/links/rules.ts); null clears rules or variants.
  rules?: RedirectRule[] | null;
  variants?: Variant[] | null;
  forward_query?: boolean;
}

/** JSON text of a jsonb column's value (kysely passes a string through as it is). */
const jsonb = (value: unknown[] | null | undefined) => (value === undefined ? undefined : value === null || value.length === 0 ? null : JSON.stringify(value));

/** Filters of a link list. All optional but the owner or the subdomain. */
export interface LinkFilter {
  ownerId?: string;
  subdomain?: string;
  /** Substring of slug, title or target URL, case-insensitive. */
  q?: string;
  tag?: string;
  /** Created at or after. */
  since?: Date;
}

/** The text `q` searches: the same expression as the trigram index links_search_live_idx. */
const searchText = sql<string>`(slug || ' ' || coalesce(title, '') || ' ' || target_url)`;

/** `%` and `_` in a search are literal characters, not LIKE wildcards. */
const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (char) => `\\${char}`);

/** SQL for links: the only place that queries the links table. */
export function linksRepository(db: Kysely<DB>) {
  const filtered = <O>(query: SelectQueryBuilder<DB, 'links', O>, filter: LinkFilter) => {
    let q = query.where('deleted_at', 'is', null);
    if (filter.ownerId !== undefined) q = q.where('owner_id', '=', filter.ownerId);
    if (filter.subdomain !== undefined) q = q.where('subdomain', '=', filter.subdomain);
    if (filter.q) q = q.where(sql<boolean>`${searchText} ILIKE ${'%' + likeLiteral(filter.q) + '%'}`);
    if (filter.tag !== undefined) q = q.where(sql<boolean>`tags @> ARRAY[${filter.tag}]::text[]`);
    if (filter.since !== undefined) q = q.where('created_at', '>=', filter.since);
    return q;
  };

  return {
    /** Inserts a link; undefined when a live link of the subdomain has the slug, or the owner used the client_id. */
    async insertIfFree(link: NewLink): Promise<LinkRow | undefined> {
      return db
        .insertInto('links')
        .values({
          id: link.id,
          owner_id: link.ownerId,
          subdomain: link.subdomain,
          slug: link.slug,
          target_url: link.targetUrl,
          title: link.title,
          tags: link.tags,
          expires_at: link.expiresAt,
          max_visits: link.maxVisits,
          redirect_type: link.redirectType,
          append_visit_id: link.appendVisitId,
          client_id: link.clientId,
          client_body_hash: link.clientBodyHash,
          fallback_url: link.fallbackUrl ?? null,
          password_hash: link.passwordHash ?? null,
          ...(link.createdAt ? { created_at: link.createdAt } : {}),
          rules: jsonb(link.rules) ?? null,
          variants: jsonb(link.variants) ?? null,
          forward_query: link.forwardQuery ?? false,
        })
        .onConflict((oc) => oc.doNothing())
        .returningAll()
        .executeTakeFirst();
    },
    /** A link by id, deleted or not. */
    async findById(id: string): Promise<LinkRow | undefined> {
      return db.selectFrom('links').selectAll().where('id', '=', id).executeTakeFirst();
    },
    /** Slug and visibility of links by id, deleted or not (for reports naming links). */
    async summaries(ids: string[]) {
      if (ids.length === 0) return [];
      return db.selectFrom('links').select(['id', 'slug', 'created_at', 'expires_at', 'deleted_at']).where('id', 'in', ids).execute();
    },
    async findByClientId(ownerId: string, clientId: string): Promise<LinkRow | undefined> {
      return db.selectFrom('links').selectAll().where('owner_id', '=', ownerId).where('client_id', '=', clientId).executeTakeFirst();
    },
    /**
     * The newest public links of a subdomain: live, not expired, not at their visit limit (neither
     * leads anywhere), created at or before `publishedBefore`; only the columns the policy module
     * allows are read.
     */
    async publicWindow(subdomain: string, publishedBefore: Date, limit: number): Promise<Pick<LinkRow, PublicLinkColumn>[]> {
      const now = new Date();
      return db
        .selectFrom('links')
        .select([...PUBLIC_LINK_COLUMNS])
        .where('subdomain', '=', subdomain)
        .where('deleted_at', 'is', null)
        .where('created_at', '<=', publishedBefore)
        .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
        .where('limit_reached_at', 'is', null)
        .orderBy('seq', 'desc')
        .limit(limit)
        .execute();
    },
    /**
     * The id of the link `slug` when the public list would show it (publicWindow's conditions): what
     * a public report filtered by link narrows to; undefined for any other link.
     */
    async publicIdBySlug(subdomain: string, slug: string, publishedBefore: Date): Promise<string | undefined> {
      const row = await db
        .selectFrom('links')
        .select('id')
        .where('subdomain', '=', subdomain)
        .where('slug', '=', slug)
        .where('deleted_at', 'is', null)
        .where('created_at', '<=', publishedBefore)
        .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', new Date())]))
        .where('limit_reached_at', 'is', null)
        .executeTakeFirst();
      return row?.id;
    },
    /** The live link a short host answers for `/{slug}` (redirects load it on a cache miss): its redirect columns. */
    async findLiveBySlug(subdomain: string, slug: string) {
      return db
        .selectFrom('links')
        .select(REDIRECT_LINK_COLUMNS)
        .where('subdomain', '=', subdomain)
        .where('slug', '=', slug)
        .where('deleted_at', 'is', null)
        .executeTakeFirst();
    },
    /** The newest live links, to warm a redirect cache: their redirect columns. */
    async newestLive(limit: number) {
      return db.selectFrom('links').select(REDIRECT_LINK_COLUMNS).where('deleted_at', 'is', null).orderBy('seq', 'desc').limit(limit).execute();
    },
    /**
     * Applies changes to a live link; undefined when the link is gone, 'slug_taken' when the new
     * slug belongs to another live link of the subdomain.
     */
    async update(id: string, changes: LinkChanges): Promise<LinkRow | 'slug_taken' | undefined> {
      try {
        return await db
          .updateTable('links')
          // A new visit limit is judged afresh by the enricher: the link redirects until it is reached again.
          .set({
            ...changes,
            rules: jsonb(changes.rules),
            variants: jsonb(changes.variants),
            ...(changes.max_visits !== undefined ? { limit_reached_at: null } : {}),
            updated_at: new Date(),
            version: sql<string>`nextval('links_version_seq')`,
          })
          .where('id', '=', id)
          .where('deleted_at', 'is', null)
          .returningAll()
          .executeTakeFirst();
      } catch (error) {
        if ((error as { code?: string }).code === '23505') return 'slug_taken';
        throw error;
      }
    },
    /** Marks a live link's visit limit reached, once; undefined when it already was (or is gone). */
    async markLimitReached(id: string): Promise<LinkRow | undefined> {
      return db
        .updateTable('links')
        .set({ limit_reached_at: new Date(), version: sql<string>`nextval('links_version_seq')` })
        .where('id', '=', id)
        .where('limit_reached_at', 'is', null)
        .where('deleted_at', 'is', null)
        .returningAll()
        .executeTakeFirst();
    },
    /** Soft-deletes a live link; undefined when it was not live. */
    async softDelete(id: string): Promise<LinkRow | undefined> {
      const now = new Date();
      return db
        .updateTable('links')
        .set({ deleted_at: now, updated_at: now, version: sql<string>`nextval('links_version_seq')` })
        .where('id', '=', id)
        .where('deleted_at', 'is', null)
        .returningAll()
        .executeTakeFirst();
    },
    /** `limit` links matching the filter, newest first, from where a page starts. */
    async page(filter: LinkFilter, at: SeqPageAt, limit: number): Promise<LinkRow[]> {
      return pageBySeq(filtered(db.selectFrom('links').selectAll(), filter), limit, at).execute();
    },
    /**
     * Links matching the filter. Without q, tag or since the answer is the sum of the
     * subdomains' live_links counters (kept by triggers) rather than a count over the rows.
     */
    async count(filter: LinkFilter): Promise<number> {
      if (filter.q === undefined && filter.tag === undefined && filter.since === undefined) {
        let query = db.selectFrom('subdomains').select((eb) => eb.fn.coalesce(eb.fn.sum<string>('live_links'), eb.val('0')).as('n'));
        if (filter.ownerId !== undefined) query = query.where('owner_id', '=', filter.ownerId);
        if (filter.subdomain !== undefined) query = query.where('name', '=', filter.subdomain);
        return Number((await query.executeTakeFirstOrThrow()).n);
      }
      const row = await filtered(
        db.selectFrom('links').select((eb) => eb.fn.countAll<string>().as('n')),
        filter,
      ).executeTakeFirstOrThrow();
      return Number(row.n);
    },
  };
}
