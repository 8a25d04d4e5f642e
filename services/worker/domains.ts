import type { Context } from '#shared/context.js';
import { publishDomainNotice } from '#shared/domains/domain-notices.js';
import { txtChecker, type TxtCheck } from '#shared/domains/dns-check.js';
import { lapseOrFail } from '#shared/domains/domains.repository.js';
import { defineJob } from '#shared/jobs/jobs.js';
import type { Consumer } from '#shared/message-log/message-log.js';
import { createNotifier } from '#shared/notifications.js';
import type { Repositories } from '../repositories.js';

/** How often the re-verification job looks for domains due (each is checked every DOMAIN_RECHECK_HOURS). */
export const DOMAIN_RECHECK_EVERY_MS = 15 * 60_000;
/** Domains one run checks at most (the next run takes the rest, oldest check first). */
const RECHECK_BATCH = 500;
/** TXT queries in flight at once. */
const RECHECK_CONCURRENCY = 8;

/** The re-verification job: one run at a time, retried once after a failure. */
export const domainRecheckJob = defineJob<Record<string, never>>({ name: 'domains.recheck', attempts: 2, backoffMs: 60_000, concurrency: 1 });

export type DomainRecheckDeps = Pick<Context, 'config' | 'cache' | 'log' | 'metrics'> & {
  repositories: Pick<Repositories, 'domains' | 'webhooks' | 'users'>;
  /** The TXT check (tests hand one through their own DNS server's resolver; default: DNS_RESOLVERS). */
  check?: (domain: string, token: string) => Promise<TxtCheck>;
};

/** What a run did: domains checked, and those that started failing, lapsed or recovered. */
export interface RecheckReport {
  checked: number;
  failing: string[];
  lapsed: string[];
  recovered: string[];
}

/**
 * Checks the TXT record of every served domain last checked DOMAIN_RECHECK_HOURS ago or more. A
 * record found keeps (or makes again) the domain `verified`. A record missing makes a verified
 * domain `failing` and notifies its owner with the moment it will lapse; a failing one whose grace
 * period (DOMAIN_GRACE_HOURS from its first failed check) has passed is `lapsed`: no longer served,
 * and its owner is notified again. Every change of what is served is announced to the edges.
 */
export async function recheckDomains(deps: DomainRecheckDeps, { now = new Date() }: { now?: Date } = {}): Promise<RecheckReport> {
  const { config, log } = deps;
  const { domains } = deps.repositories;
  const check = deps.check ?? txtChecker(config.domains.resolvers);
  const graceMs = config.domains.graceHours * 3_600_000;
  const due = await domains.dueForRecheck(new Date(now.getTime() - config.domains.recheckHours * 3_600_000 + 60_000), RECHECK_BATCH);
  const report: RecheckReport = { checked: 0, failing: [], lapsed: [], recovered: [] };
  const notifier = createNotifier({ webhooks: deps.repositories.webhooks, users: deps.repositories.users, config, log });
  try {
    let next = 0;
    const one = async () => {
      while (next < due.length) {
        const row = due[next++]!;
        const found = await check(row.domain, row.token);
        report.checked++;
        if (found.ok) {
          await domains.recordCheck(row.domain, { status: 'verified', failing_since: null, checked_at: now, check_error: null });
          if (row.status === 'failing') report.recovered.push(row.domain);
          continue;
        }
        const outcome = lapseOrFail(row, found.message, now, graceMs);
        if (!(await domains.recordCheck(row.domain, outcome))) continue;
        if (outcome.status === 'lapsed') {
          report.lapsed.push(row.domain);
          await publishDomainNotice(deps, row.domain);
          await notifier.notify({
            userId: row.owner_id,
            kind: 'domain.lapsed',
            title: `Custom domain ${row.domain} is no longer served`,
            body:
              `The TXT record that proves control of ${row.domain} was not found since ${outcome.failing_since.toISOString()} (${found.message}). ` +
              `Requests to ${row.domain} are no longer answered as the subdomain ${row.subdomain}. Restore the record and verify the domain again to serve it.`,
            data: { domain: row.domain, subdomain: row.subdomain, failing_since: outcome.failing_since.toISOString(), error: found.message },
          });
        } else if (row.status === 'verified') {
          report.failing.push(row.domain);
          const until = new Date(outcome.failing_since.getTime() + graceMs).toISOString();
          await notifier.notify({
            userId: row.owner_id,
            kind: 'domain.failing',
            title: `Custom domain ${row.domain}: its TXT record is missing`,
            body:
              `The TXT record that proves control of ${row.domain} was not found (${found.message}). The domain is still served until ${until}; ` +
              'restore the record before then, or it stops being served.',
            data: { domain: row.domain, subdomain: row.subdomain, serve_until: until, error: found.message },
          });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(RECHECK_CONCURRENCY, due.length) }, one));
  } finally {
    notifier.close();
  }
  if (report.failing.length + report.lapsed.length + report.recovered.length > 0) log.info({ ...report }, 'custom domains re-verified');
  return report;
}

/** The re-verification side of the worker role: processes its job and declares its schedule (one for all workers). */
export async function startDomainRechecks(context: DomainRecheckDeps & Pick<Context, 'jobs'>): Promise<Consumer> {
  const processor = await context.jobs.process(domainRecheckJob, async () => void (await recheckDomains(context)));
  await context.jobs.repeat(domainRecheckJob, {}, DOMAIN_RECHECK_EVERY_MS);
  return { stop: () => processor.stop() };
}
