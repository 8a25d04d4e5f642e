import { createHash, randomBytes, randomInt } from 'node:crypto';
import type { Context } from '#shared/context.js';
import { AppError } from '#shared/errors.js';
import type { EventBus } from '#shared/events/events.js';
import { requireScope, type Principal } from '#shared/http/auth.js';
import { publishLinkNotice, toRedirectLink } from '#shared/links/link-notices.js';
import { RESERVED_SLUGS } from '#shared/links/slugs.js';
import { checkTargetUrl, shortUrl } from '#shared/links/urls.js';
import type { PublicView } from '#shared/policy/policy.js';
import type { Repositories } from '#services/repositories.js';
import type { SubdomainsService } from '../subdomains/subdomains.service.js';
import type { LinkChanges, LinkFilter, LinkRow, NewLink } from '#shared/links/links.repository.js';
import { decodeSeqCursor, seqPage, seqPageMeta, type Paging } from '#shared/http/pagination.js';
import { rule } from '#shared/i18n/index.js';
import { hashPassword } from '#shared/password.js';
import type { RedirectRule, Variant } from '#shared/links/rules.js';

/** Generated slugs: 7 characters of [a-z0-9] (36^7 ≈ 7.8e10 values). */
const GENERATED_SLUG_LENGTH = 7;
const SLUG_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
const GENERATED_SLUG_ATTEMPTS = 8;

export const REDIRECT_TYPES = [301, 302, 307, 308] as const;

type LinkState = 'active' | 'expired' | 'limit_reached' | 'deleted';

/** A link as its owner sees it. */
export interface LinkView {
  id: string;
  subdomain: string;
  slug: string;
  short_url: string;
  target_url: string;
  title: string | null;
  tags: string[];
  expires_at: string | null;
  max_visits: number | null;
  redirect_type: number;
  append_visit_id: boolean;
  rules: RedirectRule[];
  variants: Variant[] | null;
  forward_query: boolean;
  state: LinkState;
  limit_reached_at: string | null;
  client_id: string | null;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
  /** Issue 40: where the link redirects once expired or at its visit limit, instead of 410. */
  fallback_url: string | null;
  /** Issue 40: the edge asks a password before redirecting. The password and its hash are never returned. */
  has_password: boolean;
  /** Only with `include=clicks`. */
  clicks?: LinkClicks;
}

/** Days in a link's click trend (`clicks.daily`): today (UTC) and the six before it. */
export const CLICK_TREND_DAYS = 7;

/** A link's human visits (redirects and tracker-started visits; bots and attack attempts apart), from the rollups. */
export interface LinkClicks {
  total: number;
  last_7_days: number;
  /** The last 7 UTC days, oldest first, today last (so far). */
  daily: { date: string; visits: number }[];
}

export interface NewLinkInput {
  subdomain: string;
  target_url: string;
  slug?: string;
  title?: string;
  tags?: string[];
  expires_at?: string;
  max_visits?: number;
  redirect_type?: number;
  append_visit_id?: boolean;
  client_id?: string;
  fallback_url?: string;
  password?: string;
  rules?: RedirectRule[];
  variants?: Variant[] | null;
  forward_query?: boolean;
}

/** One link of an import, as its source file gave it (not yet checked). */
export interface ImportedLink {
  slug: string;
  target_url: string;
  title: string | null;
  tags: string[];
  created_at: Date | null;
}

/**
 * What became of one imported link: `created` (`would_create` in a dry run); `exists` when an
 * earlier import of the same source already created it; `conflict` when the slug is another link's
 * (never overwritten); `refused` when the slug or the target is not acceptable here.
 */
export type ImportOutcome =
  | { status: 'created' | 'would_create' | 'exists'; slug: string; link_id?: string }
  | { status: 'conflict' | 'refused'; slug: string; reason: 'slug_taken' | 'slug_reserved' | 'slug_invalid' | 'target_invalid' | 'target_is_platform' };

/** A custom slug as the API accepts it (links.routes.ts checks the same). */
const SLUG_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

export interface LinkPatch {
  slug?: string;
  target_url?: string;
  title?: string | null;
  tags?: string[];
  expires_at?: string | null;
  max_visits?: number | null;
  redirect_type?: number;
  append_visit_id?: boolean;
  fallback_url?: string | null;
  password?: string | null;
  rules?: RedirectRule[];
  variants?: Variant[] | null;
  forward_query?: boolean;
}

/** Generated slug: uniform over the alphabet (crypto.randomInt, no modulo bias). */
function generateSlug(): string {
  let slug = '';
  for (let i = 0; i < GENERATED_SLUG_LENGTH; i++) slug += SLUG_ALPHABET[randomInt(SLUG_ALPHABET.length)];
  return slug;
}

/** Link ids: `l_` and 16 base64url characters (96 random bits), opaque and not sequential. */
function newLinkId(): string {
  return `l_${randomBytes(12).toString('base64url')}`;
}

/** Tags are compared in lower case; duplicates collapse. */
function normalizeTags(tags: string[]): string[] {
  return [...new Set(tags.map((tag) => tag.trim().toLowerCase()))];
}

/**
 * A stable hash of a create request as stored (normalised target, tags and slug), to tell a replay
 * from a different request reusing a client_id: `Promo` and `promo` are the same request.
 */
function bodyHash(fields: Record<string, unknown>): string {
  const sorted = Object.fromEntries(Object.entries(fields).sort(([a], [b]) => a.localeCompare(b)));
  return createHash('sha256').update(JSON.stringify(sorted)).digest('hex');
}

/** Public lists take only the subdomain and paging: the filters search owner data. */
function assertNoOwnerFilters(filters: { q?: string; tag?: string; since?: string; include?: string }): void {
  for (const field of ['q', 'tag', 'since', 'include'] as const) {
    if (filters[field] !== undefined) throw new AppError('validation_error', { [field]: rule('owner_filters_only') });
  }
}

/**
 * Links an importer hands LinksService.importLinks at once: their `link.created` events share one write
 * of the event log; a process killed mid-way loses at most these links' events (the links are stored,
 * and a resumed import finds them: `exists`).
 */
export const IMPORT_LINKS_AT_ONCE = 50;

/** What the links service uses: the links repository, the config, the cache (link notices to the edge), the event bus and the subdomains service. */
export interface LinksDeps extends Pick<Context, 'config' | 'cache' | 'log' | 'metrics'> {
  /** `stats` for click counts (the API's); a worker's import engine, which may run without the analytics store, has none. */
  repositories: Pick<Repositories, 'links'> & Partial<Pick<Repositories, 'stats'>>;
  subdomains: SubdomainsService;
  events: EventBus;
}

export type LinksService = ReturnType<typeof linksService>;

export function linksService(deps: LinksDeps) {
  const { config, subdomains, events } = deps;
  const { links, stats } = deps.repositories;

  /**
   * The views with their click counts: one read of the daily rollup per owner among them (a page
   * is one owner's links, but staff may list another's).
   */
  const withClicks = async (views: LinkView[], owners: string[], now = Date.now()): Promise<LinkView[]> => {
    if (!stats) throw new Error('click counts read the analytics store, which this process has not opened');
    const today = Math.floor(now / 86_400_000) * 86_400;
    const first = today - (CLICK_TREND_DAYS - 1) * 86_400;
    const byOwner = new Map<string, LinkView[]>();
    views.forEach((view, index) => {
      const owned = byOwner.get(owners[index]!);
      if (owned) owned.push(view);
      else byOwner.set(owners[index]!, [view]);
    });
    const counted = new Map<string, { total: number; days: Map<number, number> }>();
    for (const [ownerId, owned] of byOwner) {
      for (const row of await stats.linkClicks(
        ownerId,
        owned.map((view) => view.id),
        first,
      )) {
        const entry = counted.get(row.link_id) ?? { total: 0, days: new Map<number, number>() };
        const visits = Number(row.human);
        entry.total += visits;
        if (Number(row.d) !== 0) entry.days.set(Number(row.d), visits);
        counted.set(row.link_id, entry);
      }
    }
    return views.map((view) => {
      const entry = counted.get(view.id);
      const daily = Array.from({ length: CLICK_TREND_DAYS }, (_, index) => {
        const day = first + index * 86_400;
        return { date: new Date(day * 1000).toISOString().slice(0, 10), visits: entry?.days.get(day) ?? 0 };
      });
      const last7 = daily.reduce((sum, day) => sum + day.visits, 0);
      return { ...view, clicks: { total: entry?.total ?? 0, last_7_days: last7, daily } };
    });
  };

  const toView = (row: LinkRow, now = Date.now()): LinkView => ({
    id: row.id,
    subdomain: row.subdomain,
    slug: row.slug,
    short_url: shortUrl(config, row.subdomain, row.slug),
    target_url: row.target_url,
    title: row.title,
    tags: row.tags,
    expires_at: row.expires_at?.toISOString() ?? null,
    max_visits: row.max_visits,
    redirect_type: row.redirect_type,
    append_visit_id: row.append_visit_id,
    rules: row.rules ?? [],
    variants: row.variants,
    forward_query: row.forward_query,
    state: row.deleted_at ? 'deleted' : row.expires_at && row.expires_at.getTime() <= now ? 'expired' : row.limit_reached_at ? 'limit_reached' : 'active',
    limit_reached_at: row.limit_reached_at?.toISOString() ?? null,
    client_id: row.client_id,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    deleted_at: row.deleted_at?.toISOString() ?? null,
    fallback_url: row.fallback_url,
    has_password: row.password_hash !== null,
  });

  const target = (input: string): string => {
    const checked = checkTargetUrl(input, config);
    if (!checked.ok && checked.platform) throw new AppError('forbidden', { reason: 'target_is_platform', target_url: checked.rule });
    if (!checked.ok) throw new AppError('validation_error', { target_url: checked.rule });
    return checked.url;
  };
  /** Rule and variant targets checked as target_url is (the platform's own hosts refused), named by their path. */
  const routed = <T extends { target_url: string }>(field: 'rules' | 'variants', items: T[]): T[] =>
    items.map((item, index) => {
      const checked = checkTargetUrl(item.target_url, config);
      const path = `${field}.${index}.target_url`;
      if (!checked.ok && checked.platform) throw new AppError('forbidden', { reason: 'target_is_platform', [path]: checked.rule });
      if (!checked.ok) throw new AppError('validation_error', { [path]: checked.rule });
      return { ...item, target_url: checked.url };
    });

  /** A fallback URL is checked as a target is, its refusals named after its own field. */
  const fallback = (input: string): string => {
    const checked = checkTargetUrl(input, config);
    if (!checked.ok && checked.platform) throw new AppError('forbidden', { reason: 'target_is_platform', fallback_url: checked.rule });
    if (!checked.ok) throw new AppError('validation_error', { fallback_url: checked.rule });
    return checked.url;
  };

  const customSlug = (slug: string): string => {
    const normalized = slug.toLowerCase();
    if ((RESERVED_SLUGS as readonly string[]).includes(normalized)) throw new AppError('conflict', { slug: rule('reserved') });
    return normalized;
  };

  /** A live link the caller may manage: 404 when unknown or deleted, 403 not_owner when someone else's. */
  const managed = async (principal: Principal, id: string): Promise<LinkRow> => {
    const row = await links.findById(id);
    if (!row || row.deleted_at) throw new AppError('not_found', { link: id });
    await subdomains.access(principal, { ownerId: row.owner_id, subdomain: row.subdomain }, 'editor', { link: id });
    return row;
  };

  const announceCreated = async (row: LinkRow) => {
    await publishLinkNotice(deps, { kind: 'upsert', link: toRedirectLink(row) });
    await events.emit('link.created', { ownerId: row.owner_id, subdomain: row.subdomain }, toView(row));
  };

  /** One imported link (importLinks): its outcome, and its row when it was created now. */
  const importOne = async (
    subdomain: { name: string; owner_id: string },
    source: string,
    input: ImportedLink,
    dryRun: boolean,
  ): Promise<{ outcome: ImportOutcome; row?: LinkRow }> => {
    const slug = input.slug.toLowerCase();
    if (!SLUG_PATTERN.test(input.slug)) return { outcome: { status: 'refused', slug, reason: 'slug_invalid' } };
    if ((RESERVED_SLUGS as readonly string[]).includes(slug)) return { outcome: { status: 'refused', slug, reason: 'slug_reserved' } };
    const checked = checkTargetUrl(input.target_url, config);
    if (!checked.ok) return { outcome: { status: 'refused', slug, reason: checked.platform ? 'target_is_platform' : 'target_invalid' } };
    const clientId = `import:${source}:${subdomain.name}:${slug}`;
    const earlier = await links.findByClientId(subdomain.owner_id, clientId);
    if (earlier) return { outcome: { status: 'exists', slug, link_id: earlier.id } };
    if (dryRun) {
      const taken = await links.findLiveBySlug(subdomain.name, slug);
      return { outcome: taken ? { status: 'conflict', slug, reason: 'slug_taken' } : { status: 'would_create', slug } };
    }
    const row = await links.insertIfFree({
      id: newLinkId(),
      ownerId: subdomain.owner_id,
      subdomain: subdomain.name,
      slug,
      targetUrl: checked.url,
      title: input.title,
      tags: normalizeTags(input.tags),
      expiresAt: null,
      maxVisits: null,
      redirectType: 302,
      appendVisitId: false,
      clientId,
      clientBodyHash: null,
      ...(input.created_at ? { createdAt: input.created_at } : {}),
    });
    if (!row) {
      // A concurrent import of the same row won; else the slug is another link's.
      const winner = await links.findByClientId(subdomain.owner_id, clientId);
      return { outcome: winner ? { status: 'exists', slug, link_id: winner.id } : { status: 'conflict', slug, reason: 'slug_taken' } };
    }
    return { outcome: { status: 'created', slug, link_id: row.id }, row };
  };

  /**
   * Inserts with the given slug, or with generated ones until one is free; the original instead
   * when a concurrent create with the same client_id won the race.
   */
  const insert = async (values: Omit<NewLink, 'id' | 'slug'>, slug: string | undefined): Promise<LinkRow | { original: LinkRow }> => {
    const { clientId } = values;
    for (let attempt = 0; attempt < (slug ? 1 : GENERATED_SLUG_ATTEMPTS); attempt++) {
      const row = await links.insertIfFree({ ...values, id: newLinkId(), slug: slug ?? generateSlug() });
      if (row) return row;
      const original = clientId ? await links.findByClientId(values.ownerId, clientId) : undefined;
      if (original) return { original };
    }
    if (slug) throw new AppError('conflict', { slug: rule('taken_in_subdomain') });
    throw new AppError('service_unavailable', { reason: 'no free generated slug; retry' });
  };

  /** Page of rows → views + the spec's meta. */
  const paged = async <V>(filter: LinkFilter, paging: Paging, view: (row: LinkRow) => V) => {
    const page = await seqPage(
      paging,
      (limit, at) => links.page(filter, at, limit),
      () => links.count(filter),
    );
    return { items: page.items.map(view), meta: page.meta };
  };

  /** One page of a subdomain's public window (the newest public links, at most stats_max_items). */
  const publicPage = async (subdomain: string, view: PublicView, paging: Paging) => {
    const window = await links.publicWindow(subdomain, view.publishedBefore, view.maxItems);
    const afterSeq = paging.cursor ? BigInt(decodeSeqCursor(paging.cursor)) : undefined;
    const start =
      paging.page !== undefined ? (paging.page - 1) * paging.limit : afterSeq === undefined ? 0 : window.findIndex((row) => BigInt(row.seq) < afterSeq);
    const items = start < 0 ? [] : window.slice(start, start + paging.limit);
    const hasMore = start >= 0 && start + paging.limit < window.length;
    return { items: items.map(subdomains.toPublicLink), meta: seqPageMeta(items, window.length, hasMore, paging) };
  };

  return {
    /** Creates a link; with a client_id already used by the owner, answers the original instead (`replay`). */
    async create(principal: Principal, input: NewLinkInput): Promise<{ link: LinkView; replay: boolean }> {
      const subdomain = await subdomains.managed(principal, input.subdomain, 'editor');
      const ownerId = subdomain.owner_id;
      const expiresAt = input.expires_at ? new Date(input.expires_at) : null;
      const normalized = {
        subdomain: subdomain.name,
        targetUrl: target(input.target_url),
        slug: input.slug === undefined ? undefined : customSlug(input.slug),
        title: input.title ?? null,
        tags: normalizeTags(input.tags ?? []),
        expiresAt,
        maxVisits: input.max_visits ?? null,
        redirectType: input.redirect_type ?? 302,
        appendVisitId: input.append_visit_id ?? false,
        fallbackUrl: input.fallback_url === undefined ? null : fallback(input.fallback_url),
      };
      const routing = {
        rules: input.rules ? routed('rules', input.rules) : null,
        variants: input.variants ? routed('variants', input.variants) : null,
        // Omitted: the subdomain's default (migration 0021), taken now; the link keeps it if the default changes.
        forwardQuery: input.forward_query ?? subdomain.forward_query,
      };
      const clientId = input.client_id ?? null;
      const passwordHash = input.password === undefined ? null : await hashPassword(input.password);
      // Options at their default stay out of the hash, so requests hashed before an option existed still replay.
      const { appendVisitId, fallbackUrl, ...hashed } = normalized;
      // The request's own forward_query, not the subdomain's default: a replay stays one after the default changes.
      const routingHashed = Object.fromEntries(
        Object.entries({ ...routing, forwardQuery: input.forward_query ?? false }).filter(
          ([, value]) => value !== null && value !== false && !(Array.isArray(value) && value.length === 0),
        ),
      );
      const hash = clientId
        ? bodyHash({
            ...hashed,
            ...(appendVisitId ? { appendVisitId } : {}),
            ...(fallbackUrl ? { fallbackUrl } : {}),
            // Whether protected, never the password: a fast hash of it would be guessable.
            ...(passwordHash ? { protected: true } : {}),
            ...routingHashed,
            expiresAt: expiresAt?.toISOString() ?? null,
          })
        : null;
      const replayOf = (original: LinkRow): { link: LinkView; replay: boolean } => {
        if (original.client_body_hash !== hash) {
          throw new AppError('conflict', { client_id: rule('client_id_reused') });
        }
        return { link: toView(original), replay: true };
      };
      const earlier = clientId ? await links.findByClientId(ownerId, clientId) : undefined;
      if (earlier) return replayOf(earlier);

      // A past expiry is not refused (no schema can say "in the future"): the link is created expired (410).
      const { slug, ...values } = normalized;
      const row = await insert({ ...values, ...routing, passwordHash, ownerId, clientId, clientBodyHash: hash }, slug);
      if ('original' in row) return replayOf(row.original);
      await announceCreated(row);
      return { link: toView(row), replay: false };
    },

    /**
     * Imports links into a subdomain the caller manages (checked once by the importer), in their order.
     * A link's client_id is `import:<source>:<subdomain>:<slug>`, so a second import of the same row finds
     * it (`exists`) and creates nothing; a slug taken by any other link is a `conflict`, never
     * overwritten. The edge hears of each link as it is created; the `link.created` events of the whole
     * call are published together, after the links (one write of the event log, whose group commit would
     * otherwise cost every link its own wait: an import of 1 000 links spent 50 s there).
     */
    async importLinks(subdomain: { name: string; owner_id: string }, source: string, inputs: ImportedLink[], dryRun: boolean): Promise<ImportOutcome[]> {
      const outcomes: ImportOutcome[] = [];
      const created: LinkRow[] = [];
      for (const input of inputs) {
        const { outcome, row } = await importOne(subdomain, source, input, dryRun);
        outcomes.push(outcome);
        if (!row) continue;
        created.push(row);
        await publishLinkNotice(deps, { kind: 'upsert', link: toRedirectLink(row) });
      }
      if (created.length > 0)
        await events.emitMany(created.map((row) => ({ type: 'link.created', ownerId: row.owner_id, subdomain: row.subdomain, data: toView(row) })));
      return outcomes;
    },

    async get(principal: Principal, id: string, options: { clicks?: boolean } = {}): Promise<LinkView> {
      const row = await managed(principal, id);
      const view = toView(row);
      return options.clicks ? (await withClicks([view], [row.owner_id]))[0]! : view;
    },

    async update(principal: Principal, id: string, patch: LinkPatch): Promise<LinkView> {
      const before = await managed(principal, id);
      const changes: LinkChanges = {};
      if (patch.slug !== undefined) changes.slug = customSlug(patch.slug);
      if (patch.target_url !== undefined) changes.target_url = target(patch.target_url);
      if (patch.title !== undefined) changes.title = patch.title;
      if (patch.tags !== undefined) changes.tags = normalizeTags(patch.tags);
      if (patch.expires_at !== undefined) {
        // A past time expires the link now (its short URL answers 410; DELETE removes it instead).
        changes.expires_at = patch.expires_at === null ? null : new Date(patch.expires_at);
      }
      if (patch.max_visits !== undefined) changes.max_visits = patch.max_visits;
      if (patch.redirect_type !== undefined) changes.redirect_type = patch.redirect_type;
      if (patch.append_visit_id !== undefined) changes.append_visit_id = patch.append_visit_id;
      if (patch.fallback_url !== undefined) changes.fallback_url = patch.fallback_url === null ? null : fallback(patch.fallback_url);
      if (patch.password !== undefined) changes.password_hash = patch.password === null ? null : await hashPassword(patch.password);
      if (patch.rules !== undefined) changes.rules = routed('rules', patch.rules);
      if (patch.variants !== undefined) changes.variants = patch.variants === null ? null : routed('variants', patch.variants);
      if (patch.forward_query !== undefined) changes.forward_query = patch.forward_query;
      const row = await links.update(id, changes);
      if (row === 'slug_taken') throw new AppError('conflict', { slug: rule('taken_in_subdomain') });
      if (!row) throw new AppError('not_found', { link: id });
      const moved = row.slug !== before.slug ? { previous: { subdomain: before.subdomain, slug: before.slug } } : {};
      await publishLinkNotice(deps, { kind: 'upsert', link: toRedirectLink(row), ...moved });
      return toView(row);
    },

    /** Soft delete: the link stops redirecting and leaves lists; its statistics stay. */
    async remove(principal: Principal, id: string): Promise<LinkView> {
      await managed(principal, id);
      const row = await links.softDelete(id);
      if (!row) throw new AppError('not_found', { link: id });
      await publishLinkNotice(deps, { kind: 'delete', link: toRedirectLink(row) });
      return toView(row);
    },

    /**
     * A copy of a live link under a new generated slug (no client_id: the copy is a new object). An
     * expiry already past is not copied: the copy of an expired link redirects until one is set.
     */
    async duplicate(principal: Principal, id: string): Promise<LinkView> {
      const source = await managed(principal, id);
      // No client_id: never the original of a concurrent create.
      const row = (await insert(
        {
          ownerId: source.owner_id,
          subdomain: source.subdomain,
          targetUrl: source.target_url,
          title: source.title,
          tags: source.tags,
          expiresAt: source.expires_at && source.expires_at.getTime() > Date.now() ? source.expires_at : null,
          maxVisits: source.max_visits,
          redirectType: source.redirect_type,
          appendVisitId: source.append_visit_id,
          fallbackUrl: source.fallback_url,
          passwordHash: source.password_hash,
          rules: source.rules,
          variants: source.variants,
          forwardQuery: source.forward_query,
          clientId: null,
          clientBodyHash: null,
        },
        undefined,
      )) as LinkRow;
      await announceCreated(row);
      return toView(row);
    },

    /**
     * The caller's links, newest first. With `subdomain`: the subdomain's links when the caller
     * manages it (links:read needed), else its public list when the policy shows links, else 403
     * not_owner.
     */
    async list(principal: Principal, filters: { subdomain?: string; q?: string; tag?: string; since?: string; include?: 'clicks' }, paging: Paging) {
      const filter: LinkFilter = { q: filters.q, tag: filters.tag?.trim().toLowerCase(), since: filters.since ? new Date(filters.since) : undefined };
      if (filters.subdomain !== undefined) {
        const { ownerId, view } = await subdomains.policyView(filters.subdomain);
        // The owner, staff and every member of the subdomain's team read its links.
        if (!(await subdomains.roleFor(principal, { ownerId, subdomain: filters.subdomain }))) {
          if (!view.links) throw new AppError('not_owner', { subdomain: filters.subdomain });
          assertNoOwnerFilters(filters);
          return publicPage(filters.subdomain, view, paging);
        }
        filter.subdomain = filters.subdomain;
      } else filter.ownerId = principal.userId;
      requireScope(principal, 'links:read');
      const now = Date.now();
      if (filters.include !== 'clicks') return paged(filter, paging, (row) => toView(row, now));
      const page = await paged(filter, paging, (row) => ({ view: toView(row, now), owner: row.owner_id }));
      const items = await withClicks(
        page.items.map((item) => item.view),
        page.items.map((item) => item.owner),
        now,
      );
      return { items, meta: page.meta };
    },

    /**
     * The public list of a subdomain: only when its policy shows links, only links neither deleted
     * nor expired and older than the publish delay, never more than its stats_max_items newest.
     */
    async publicList(subdomain: string, filters: { q?: string; tag?: string; since?: string; include?: string }, paging: Paging) {
      const { view } = await subdomains.policyView(subdomain);
      if (!view.links) throw new AppError('forbidden', { reason: 'links_not_public', subdomain });
      assertNoOwnerFilters(filters);
      return publicPage(subdomain, view, paging);
    },

    /** The short URL a QR code encodes, for a link the caller may manage. */
    async shortUrlOf(principal: Principal, id: string): Promise<{ url: string; slug: string; subdomain: string }> {
      const row = await managed(principal, id);
      return { url: shortUrl(config, row.subdomain, row.slug), slug: row.slug, subdomain: row.subdomain };
    },
  };
}
