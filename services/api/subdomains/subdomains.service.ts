import type { Context } from '#shared/context.js';
import { AppError } from '#shared/errors.js';
import { canManage, type Principal } from '#shared/http/auth.js';
import { shortUrl } from '#shared/links/urls.js';
import { policyOf, publicSummary, publicView, type Policy, type PublicLinkColumn, type PublicSummary } from '#shared/policy/policy.js';
import type { LinkRow } from '#shared/links/links.repository.js';
import type { SubdomainChanges, SubdomainRow } from '#shared/subdomains/subdomains.repository.js';
import { publishSubdomainNotice } from '#shared/subdomains/subdomain-notices.js';
import { rule } from '#shared/i18n/index.js';
import { latestCutoff, rawVisitsSince, retentionDaysOf } from '#shared/analytics/visit-retention.js';
import type { Repositories } from '#services/repositories.js';
import type { AuditEntry } from '#shared/audit/audit.repository.js';
import type { TeamRole } from '#shared/db/schema.js';
import { roleAtLeast } from '../teams/roles.js';

/** Names nobody can claim: hosts the platform or mail/DNS conventions use. */
export const RESERVED_SUBDOMAINS = [
  'www',
  'api',
  'admin',
  'mail',
  'static',
  'app',
  'dashboard',
  'auth',
  'login',
  'cdn',
  'assets',
  'status',
  'docs',
  'help',
  'support',
  'blog',
  'ftp',
  'smtp',
  'imap',
  'pop',
  'pop3',
  'mx',
  'ns1',
  'ns2',
  'webmail',
  'root',
  'system',
  'tracker',
  'metrics',
  'health',
  'internal',
  'staff',
  'security',
  'abuse',
  'postmaster',
  'hostmaster',
  'localhost',
] as const;

/**
 * A name that can be claimed: a DNS label (lower-case letters, digits and hyphens, 3 to 63
 * characters, no hyphen at either end) without `--` in positions 3–4, the form IDNA reserves, of
 * which punycode labels (`xn--…`) are the one in use. Browsers show a punycode label as Unicode,
 * which can imitate another name (`xn--pypal-4ve` reads as a "paypal"), so such a claim is refused
 * rather than flagged. One pattern without lookarounds (test generators cannot draw those), so that
 * the OpenAPI document states the whole rule.
 */
export const SUBDOMAIN_NAME = /^[a-z0-9][a-z0-9-](?:[a-z0-9]|[a-z0-9-][a-z0-9]|(?:[a-z0-9][a-z0-9-]|-[a-z0-9])[a-z0-9-]{0,58}[a-z0-9])$/;

/** The IDNA reserved form (`--` in positions 3–4, punycode `xn--` included), told apart for its own message. */
export const IDNA_FORM = /^..--/;

/** The longest retention anyone may set: VISITS_RETENTION_DAYS_MAX's own bound (a hundred years). */
export const MAX_RETENTION_DAYS = 36_500;

/** Subdomains one account may hold (staff included: a runaway script should stop somewhere). */
export const MAX_SUBDOMAINS_PER_OWNER = 50;

/** A subdomain as its owner sees it: the policy fields at the top level, as PATCH sets them. */
export type SubdomainView = {
  name: string;
  title: string | null;
  url: string;
  owner_id: string;
  team_id: string | null;
  /** The caller's standing: `owner` of its own (or as staff), else its role in the subdomain's team. */
  role: TeamRole;
  links_count: number;
  tracker_origins: string[];
  forward_query: boolean;
  visits_retention_days: number | null;
  raw_visits_since: string | null;
  created_at: string;
  updated_at: string;
} & Policy;

/** A link as the public sees it on a page whose policy lists links. */
export interface PublicLinkView {
  slug: string;
  short_url: string;
  title: string | null;
  created_at: string;
}

/** The public page payload: hidden parts are absent, never null. */
export interface PublicPage {
  name: string;
  title: string | null;
  url: string;
  public: PublicSummary;
  links?: PublicLinkView[];
  owner?: { display_name: string | null };
}

export type SubdomainsService = ReturnType<typeof subdomainsService>;

/**
 * Subdomains: claims, policies and public pages (the database, the config for short URLs, and the
 * cache that carries subdomain-change notices to the edge, which holds the tracker origins).
 */
export function subdomainsService(
  deps: Pick<Context, 'config' | 'cache' | 'log' | 'metrics'> & { repositories: Pick<Repositories, 'subdomains' | 'links' | 'teams'> },
) {
  const { config, repositories } = deps;
  const { subdomains, links, teams } = repositories;
  const origin = (name: string) => shortUrl(config, name, '');

  const rawSince = (row: Pick<SubdomainRow, 'visits_retention_days'>) =>
    rawVisitsSince(retentionDaysOf(row.visits_retention_days, config.retention.visitsMaxDays));

  const toView = (row: SubdomainRow, role: TeamRole = 'owner'): SubdomainView => ({
    name: row.name,
    title: row.title,
    url: origin(row.name),
    owner_id: row.owner_id,
    team_id: row.team_id,
    role,
    links_count: Number(row.live_links),
    tracker_origins: row.tracker_origins,
    forward_query: row.forward_query,
    visits_retention_days: row.visits_retention_days,
    raw_visits_since: rawSince(row)?.toISOString() ?? null,
    ...policyOf(row),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  });

  const toPublicLink = (row: Pick<LinkRow, PublicLinkColumn>): PublicLinkView => ({
    slug: row.slug,
    short_url: shortUrl(config, row.subdomain, row.slug),
    title: row.title,
    created_at: row.created_at.toISOString(),
  });

  /** The caller's standing in a subdomain: `owner` for its owner and staff holding `admin`, else its role in the subdomain's team, if any. */
  const roleFor = async (principal: Principal, object: { ownerId: string; subdomain: string }): Promise<TeamRole | undefined> =>
    canManage(principal, object.ownerId) ? 'owner' : teams.roleViaSubdomain(object.subdomain, principal.userId);

  /**
   * The one ownership check of everything in a subdomain (the subdomain, its links, their statistics
   * and visits): its owner and staff holding `admin` may; so may a member of the subdomain's team
   * whose role is at least `need` (a team owner always). Anyone else: 403 `not_owner`; a member of
   * the team whose role is too narrow: 403 `forbidden` (`team_role_too_low`). `what` names the
   * object in the refusal. Read per request, so a removed member is refused from the next one.
   */
  const access = async (principal: Principal, object: { ownerId: string; subdomain: string }, need: TeamRole, what: Record<string, string>) => {
    const role = await roleFor(principal, object);
    if (!role) throw new AppError('not_owner', what);
    if (!roleAtLeast(role, need)) throw new AppError('forbidden', { reason: 'team_role_too_low', role, required_role: need, ...what });
  };

  /**
   * The subdomain if the caller may act on it with a team role of at least `need` (default: owner,
   * that is its owner, staff or a team owner): 404 when unknown, 403 as `access` says.
   */
  const managed = async (principal: Principal, name: string, need: TeamRole = 'owner'): Promise<SubdomainRow> => {
    const row = await subdomains.find(name);
    if (!row) throw new AppError('not_found', { subdomain: name });
    await access(principal, { ownerId: row.owner_id, subdomain: row.name }, need, { subdomain: name });
    return row;
  };

  return {
    /** The most days a subdomain may keep raw visits: the operator's maximum, else the schema's bound. */
    retentionMaxDays: config.retention.visitsMaxDays > 0 ? config.retention.visitsMaxDays : MAX_RETENTION_DAYS,
    managed,
    access,
    roleFor,
    toPublicLink,
    async claim(principal: Principal, input: { name: string; title?: string; tracker_origins?: string[] }): Promise<SubdomainView> {
      if ((RESERVED_SUBDOMAINS as readonly string[]).includes(input.name)) {
        throw new AppError('conflict', { name: rule('reserved') });
      }
      if ((await subdomains.countByOwner(principal.userId)) >= MAX_SUBDOMAINS_PER_OWNER) {
        throw new AppError('forbidden', { reason: 'limit_reached', limit: MAX_SUBDOMAINS_PER_OWNER });
      }
      const row = await subdomains.insertIfFree(input.name, principal.userId, input.title ?? null, input.tracker_origins ?? []);
      if (!row) throw new AppError('conflict', { name: rule('taken') });
      // An edge may hold the name as unclaimed (a beacon came first): its origins apply at once.
      if (row.tracker_origins.length > 0) await publishSubdomainNotice(deps, row.name);
      return toView(row);
    },
    /** One subdomain as its owner (or staff) sees it: 404 when unknown, 403 not_owner when someone else's. */
    async get(principal: Principal, name: string): Promise<SubdomainView> {
      return toView(await managed(principal, name, 'viewer'));
    },
    /**
     * Gives the subdomain to a team (`teamId`), or back to its owner alone (null). Giving it: its
     * owner (or staff), who must be an owner or admin of the team. Taking it back: its owner, or an
     * owner or admin of its team. Audited (`subdomain.team_assigned`, `subdomain.team_unassigned`).
     */
    async setTeam(principal: Principal, name: string, teamId: string | null, ip: string, audit: (entry: AuditEntry) => void): Promise<SubdomainView> {
      const row = await subdomains.find(name);
      if (!row) throw new AppError('not_found', { subdomain: name });
      if (teamId === null) {
        await access(principal, { ownerId: row.owner_id, subdomain: row.name }, 'admin', { subdomain: name });
      } else {
        if (!canManage(principal, row.owner_id)) throw new AppError('not_owner', { subdomain: name });
        if (!(await teams.findById(teamId))) throw new AppError('not_found', { team: teamId });
        const role = (await teams.roleOf(teamId, principal.userId)) ?? (principal.scopes.has('admin') ? 'owner' : undefined);
        if (!role) throw new AppError('not_owner', { team: teamId });
        if (!roleAtLeast(role, 'admin')) throw new AppError('forbidden', { reason: 'team_role_too_low', role, required_role: 'admin', team: teamId });
      }
      const updated = await subdomains.setTeam(name, teamId);
      if (!updated) throw new AppError('not_found', { subdomain: name });
      if (row.team_id !== teamId) {
        const team = teamId ?? row.team_id;
        audit({
          action: teamId ? 'subdomain.team_assigned' : 'subdomain.team_unassigned',
          actorId: principal.userId,
          target: team,
          ip,
          details: { team_id: team, subdomain: name, ...(teamId && row.team_id ? { from_team_id: row.team_id } : {}) },
        });
      }
      return toView(updated);
    },
    /** The caller's subdomains; with `teams`, those of its teams too, each with the caller's role in it. */
    async list(principal: Principal, options: { teams?: boolean } = {}): Promise<SubdomainView[]> {
      if (!options.teams) return (await subdomains.listByOwner(principal.userId)).map((row) => toView(row));
      return (await subdomains.listReachable(principal.userId)).map(({ member_role, ...row }) =>
        toView(row, row.owner_id === principal.userId ? 'owner' : (member_role ?? 'viewer')),
      );
    },
    async update(principal: Principal, name: string, changes: SubdomainChanges): Promise<SubdomainView> {
      await managed(principal, name, 'admin');
      const max = config.retention.visitsMaxDays;
      if (changes.visits_retention_days && max > 0 && changes.visits_retention_days > max) {
        throw new AppError('validation_error', { visits_retention_days: rule('retention_days', { max }) });
      }
      const row = await subdomains.update(name, changes);
      if (!row) throw new AppError('not_found', { subdomain: name });
      if (changes.tracker_origins !== undefined) await publishSubdomainNotice(deps, row.name);
      return toView(row);
    },
    /** The public page payload, built from the policy module's view of the subdomain. */
    async publicPage(name: string): Promise<PublicPage> {
      const row = await subdomains.findWithOwner(name);
      if (!row) throw new AppError('not_found', { subdomain: name });
      const view = publicView(policyOf(row));
      const page: PublicPage = {
        name: row.name,
        title: row.title,
        url: origin(row.name),
        public: publicSummary(view),
      };
      if (view.links) {
        page.links = (await links.publicWindow(row.name, view.publishedBefore, view.maxItems)).map(toPublicLink);
      }
      if (view.owner) page.owner = { display_name: row.owner_display_name };
      return page;
    },
    /** A subdomain's owner, what the public may see of it, and since when its raw visits are all kept (null: all are), for the visit lists. */
    async policyView(name: string) {
      const row = await subdomains.find(name);
      if (!row) throw new AppError('not_found', { subdomain: name });
      return { ownerId: row.owner_id, view: publicView(policyOf(row)), rawVisitsSince: rawSince(row) };
    },
    /** Since when every raw visit of the subdomains of `ownerId` is kept (the latest of their cutoffs; null: all are). */
    async rawVisitsSinceOf(ownerId: string, only?: string): Promise<Date | null> {
      const rows = only ? [await subdomains.find(only)].filter((row) => row !== undefined) : await subdomains.listByOwner(ownerId);
      return latestCutoff(rows.map(rawSince));
    },
  };
}
