import { randomBytes } from 'node:crypto';
import type { Context } from '#shared/context.js';
import { publishDomainNotice } from '#shared/domains/domain-notices.js';
import { challengeOf, txtChecker, type TxtCheck } from '#shared/domains/dns-check.js';
import { normalizeDomain } from '#shared/domains/domain-names.js';
import { lapseOrFail, type CustomDomainRow } from '#shared/domains/domains.repository.js';
import { AppError } from '#shared/errors.js';
import { SUBDOMAIN_LABEL } from '#shared/links/hosts.js';
import type { Principal } from '#shared/http/auth.js';
import { rule } from '#shared/i18n/index.js';
import type { Repositories } from '#services/repositories.js';
import { roleAtLeast } from '../teams/roles.js';
import type { SubdomainsService } from '../subdomains/subdomains.service.js';

/** Custom domains one subdomain may have. */
export const MAX_DOMAINS_PER_SUBDOMAIN = 10;

/** A custom domain as its owner (and the admins of its subdomain's team) see it. */
export interface DomainView {
  domain: string;
  subdomain: string;
  status: CustomDomainRow['status'];
  served: boolean;
  verification: { type: 'TXT'; name: string; value: string };
  verified_at: string | null;
  failing_since: string | null;
  serve_until: string | null;
  checked_at: string | null;
  check_error: string | null;
  created_at: string;
  updated_at: string;
}

const iso = (date: Date | null) => date?.toISOString() ?? null;

export type DomainsService = ReturnType<typeof domainsService>;

/** Custom domains: attach one to a subdomain, prove it by a TXT record, detach it. */
export function domainsService(
  deps: Pick<Context, 'config' | 'cache' | 'log' | 'metrics'> & {
    repositories: Pick<Repositories, 'domains' | 'audit' | 'subdomains'>;
    subdomains: SubdomainsService;
    /** The TXT check (tests may hand their own resolver's; default: DNS_RESOLVERS). */
    check?: (domain: string, token: string) => Promise<TxtCheck>;
  },
) {
  const { config, subdomains } = deps;
  const { domains, audit: audits } = deps.repositories;
  const check = deps.check ?? txtChecker(config.domains.resolvers);
  const graceMs = config.domains.graceHours * 3_600_000;
  const platform = { baseDomain: config.baseDomain, apiHost: new URL(config.publicUrl).hostname };

  const toView = (row: CustomDomainRow): DomainView => ({
    domain: row.domain,
    subdomain: row.subdomain,
    status: row.status,
    served: row.status === 'verified' || row.status === 'failing',
    verification: challengeOf(row.domain, row.token),
    verified_at: iso(row.verified_at),
    failing_since: iso(row.failing_since),
    serve_until: row.status === 'failing' && row.failing_since ? new Date(row.failing_since.getTime() + graceMs).toISOString() : null,
    checked_at: iso(row.checked_at),
    check_error: row.check_error,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  });

  /** A domain name from the path or body as stored; a name that cannot be one is 404 on a path (nothing is stored under it). */
  const nameOf = (input: string): string | undefined => {
    const normal = normalizeDomain(input, platform);
    return 'domain' in normal ? normal.domain : undefined;
  };

  /**
   * The domain if the caller may manage it: the owner of its subdomain (or staff), or an admin or
   * owner of the subdomain's team. Unknown: 404; someone else's: 403 `not_owner`.
   */
  const managed = async (principal: Principal, input: string): Promise<CustomDomainRow & { owner_id: string }> => {
    const domain = nameOf(input);
    const row = domain ? await domains.find(domain) : undefined;
    if (!row) throw new AppError('not_found', { domain: input });
    await subdomains.managed(principal, row.subdomain, 'admin').catch((error: unknown) => {
      if (error instanceof AppError && error.code === 'not_found') throw new AppError('not_owner', { domain: row.domain });
      throw error;
    });
    return row;
  };

  const changed = (domain: string) => publishDomainNotice(deps, domain);
  const audit = (principal: Principal, action: string, domain: string, ip: string, details: Record<string, unknown> = {}) =>
    audits.insert({ action, actorId: principal.userId, target: domain, ip, details });

  return {
    async create(principal: Principal, input: { domain: string; subdomain: string }, ip: string): Promise<DomainView> {
      const normal = normalizeDomain(input.domain, platform);
      if ('problem' in normal) {
        throw new AppError('validation_error', { domain: rule(normal.problem === 'platform_domain' ? 'platform_domain' : 'domain_name') });
      }
      const target = await subdomains.managed(principal, input.subdomain.toLowerCase(), 'admin');
      if ((await domains.countBySubdomain(target.name)) >= MAX_DOMAINS_PER_SUBDOMAIN) {
        throw new AppError('forbidden', { reason: 'limit_reached', limit: MAX_DOMAINS_PER_SUBDOMAIN, hint: 'remove a custom domain of this subdomain first' });
      }
      const row = await domains.insertIfFree({
        domain: normal.domain,
        subdomain: target.name,
        token: randomBytes(16).toString('hex'),
        created_by: principal.userId,
      });
      if (!row) throw new AppError('conflict', { domain: rule('taken') });
      await audit(principal, 'domain.create', row.domain, ip, { subdomain: row.subdomain });
      return toView(row);
    },
    /** The domains of the subdomains the caller owns, or is an admin or owner of through a team. */
    async list(principal: Principal): Promise<DomainView[]> {
      const rows = await domains.listReachable(principal.userId);
      return rows.filter((row) => row.owner_id === principal.userId || (row.member_role !== null && roleAtLeast(row.member_role, 'admin'))).map(toView);
    },
    async get(principal: Principal, domain: string): Promise<DomainView> {
      return toView(await managed(principal, domain));
    },
    /** Detaches a domain: no longer served from the moment every node has read the notice (at most a minute without one). */
    async remove(principal: Principal, domain: string, ip: string): Promise<DomainView> {
      const row = await managed(principal, domain);
      await domains.delete(row.domain);
      await changed(row.domain);
      await audit(principal, 'domain.delete', row.domain, ip, { subdomain: row.subdomain, status: row.status });
      return toView(row);
    },
    /**
     * Checks the TXT record now. Found: the domain is verified and served (again). Not found: a
     * pending or lapsed domain stays so, with the reason in `check_error`; a served one is handled as
     * re-verification handles it (failing, then lapsed after the grace period).
     */
    async verify(principal: Principal, domain: string, ip: string): Promise<DomainView> {
      const row = await managed(principal, domain);
      const now = new Date();
      const found = await check(row.domain, row.token);
      const outcome = found.ok
        ? { status: 'verified' as const, verified_at: row.verified_at ?? now, failing_since: null, checked_at: now, check_error: null }
        : row.status === 'verified' || row.status === 'failing'
          ? lapseOrFail(row, found.message, now, graceMs)
          : { status: row.status, failing_since: null, checked_at: now, check_error: found.message };
      const updated = await domains.recordCheck(row.domain, outcome);
      if (!updated) throw new AppError('not_found', { domain });
      if (updated.status !== row.status) await changed(row.domain);
      await audit(principal, 'domain.verify', row.domain, ip, { result: found.ok ? 'verified' : found.reason, status: updated.status });
      return toView(updated);
    },
    /** `ask` of a TLS proxy's on-demand certificates: whether a host name is served here (a served custom domain, or a subdomain's short host). */
    async servesHost(input: string): Promise<boolean> {
      const host = input.trim().toLowerCase().replace(/\.$/, '');
      const suffix = `.${config.baseDomain}`;
      if (host === platform.apiHost) return false;
      if (host.endsWith(suffix)) {
        const label = host.slice(0, -suffix.length);
        return SUBDOMAIN_LABEL.test(label) && (await deps.repositories.subdomains.find(label)) !== undefined;
      }
      const domain = nameOf(host);
      return domain !== undefined && (await domains.isServed(domain));
    },
  };
}
