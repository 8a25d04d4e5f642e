import type { Context } from '#shared/context.js';
import { rawVisitsSince, retentionDaysOf } from '#shared/analytics/visit-retention.js';
import { defineJob } from '#shared/jobs/jobs.js';
import type { Consumer } from '#shared/message-log/message-log.js';
import type { Repositories } from '../repositories.js';

/** How often the retention job runs (at the worker's start, then every hour). */
export const RETENTION_EVERY_MS = 3_600_000;
/** Rows one DELETE removes: short transactions, however large the backlog. */
export const RETENTION_BATCH = 5_000;
/** Batches per table and run: a run stays bounded; what is left waits for the next run. */
export const RETENTION_MAX_BATCHES = 200;

const DAY_MS = 86_400_000;

/** The retention job: one kind, one run at a time per process, retried once soon after a failure. */
export const retentionJob = defineJob<Record<string, never>>({ name: 'retention.prune', attempts: 2, backoffMs: 60_000, concurrency: 1 });

export interface PruneReport {
  webhook_deliveries: number;
  audit_log: number;
}

export interface PruneOptions {
  now?: Date;
  batch?: number;
  maxBatches?: number;
  stopping?: () => boolean;
}

/**
 * Deletes the webhook delivery-log rows older than WEBHOOK_DELIVERY_RETENTION_DAYS and the audit
 * rows older than AUDIT_RETENTION_DAYS (0: kept forever), in batches of `batch` rows, at most
 * `maxBatches` per table; `stopping` ends it between two batches.
 */
export async function pruneExpired(
  context: Pick<Context, 'config'> & { repositories: Pick<Repositories, 'webhooks' | 'audit'> },
  { now = new Date(), batch = RETENTION_BATCH, maxBatches = RETENTION_MAX_BATCHES, stopping = (): boolean => false }: PruneOptions = {},
): Promise<PruneReport> {
  const { webhookDeliveriesDays, auditDays } = context.config.retention;
  const { webhooks: deliveries, audit: audits } = context.repositories;
  const drain = async (days: number, remove: (cutoff: Date, limit: number) => Promise<number>) => {
    if (days === 0) return 0;
    const cutoff = new Date(now.getTime() - days * DAY_MS);
    let total = 0;
    for (let round = 0; round < maxBatches && !stopping(); round++) {
      const deleted = await remove(cutoff, batch);
      total += deleted;
      if (deleted < batch) break;
    }
    return total;
  };
  return {
    webhook_deliveries: await drain(webhookDeliveriesDays, (cutoff, limit) => deliveries.deleteAttemptsBefore(cutoff, limit)),
    audit_log: await drain(auditDays, (cutoff, limit) => audits.deleteBefore(cutoff, limit)),
  };
}

/** The repositories raw-visit retention reads and prunes: the subdomains' settings, ClickHouse `visits`. */
export type RawVisitRepositories = Pick<Repositories, 'visits' | 'subdomains'>;

/**
 * Deletes the raw visits (and their beacon states) older than their subdomain's retention
 * (`visits_retention_days`, at most VISITS_RETENTION_DAYS_MAX; without one, that maximum), in one
 * ClickHouse mutation for every subdomain; the rollups keep counting them. Records the oldest raw
 * visit left in the `visits_oldest_raw_timestamp_seconds` gauge. Answers the rows deleted.
 */
export async function pruneRawVisits(
  context: Pick<Context, 'config' | 'metrics'> & { repositories: RawVisitRepositories },
  { now = new Date() }: { now?: Date } = {},
): Promise<number> {
  const max = context.config.retention.visitsMaxDays;
  const { visits, subdomains } = context.repositories;
  // rawVisitsSince cuts on the hour: a retry within the hour deletes (and folds into the link rollup) the same rows.
  const cutoffs = new Map<string, number>();
  for (const row of await subdomains.withVisitsRetention()) {
    cutoffs.set(row.name, rawVisitsSince(retentionDaysOf(row.visits_retention_days, max), now.getTime())!.getTime());
  }
  const fallback = rawVisitsSince(retentionDaysOf(null, max), now.getTime())?.getTime() ?? 0;
  const deleted = await visits.pruneOlderThan(cutoffs, fallback);
  const oldest = await visits.oldestTs();
  context.metrics.visitsOldestRaw.set(oldest === null ? 0 : oldest / 1000);
  return deleted;
}

/** What the retention job uses: its settings, the repositories it prunes, the job runner, the logger. */
export type RetentionDeps = Pick<Context, 'config' | 'jobs' | 'log' | 'metrics'> & {
  /** With the ClickHouse repositories (a process with the analytics store), raw visits are pruned too. */
  repositories: Pick<Repositories, 'webhooks' | 'audit'> & Partial<RawVisitRepositories>;
};

/**
 * The retention side of the worker role: processes the retention job and declares its hourly
 * schedule (one schedule for all workers on BullMQ; embedded, the process's own, kept with its time
 * in the job runner's folder). Without raw visits to prune (no analytics store) and with both log
 * retentions 0, the schedule is removed.
 */
export async function startRetention(context: RetentionDeps): Promise<Consumer> {
  const { webhookDeliveriesDays, auditDays } = context.config.retention;
  const { visits, subdomains } = context.repositories;
  const rawVisits = visits && subdomains ? { ...context, repositories: { visits, subdomains } } : undefined;
  if (webhookDeliveriesDays === 0 && auditDays === 0 && !rawVisits) {
    await context.jobs.stopRepeating(retentionJob);
    return { stop: async () => undefined };
  }
  let stopped = false;
  const processor = await context.jobs.process(retentionJob, async () => {
    const report = await pruneExpired(context, { stopping: () => stopped });
    const visitsDeleted = rawVisits && !stopped ? await pruneRawVisits(rawVisits) : 0;
    if (report.webhook_deliveries > 0 || report.audit_log > 0 || visitsDeleted > 0) {
      context.log.info({ deleted: { ...report, visits: visitsDeleted } }, 'retention: expired rows deleted');
    }
  });
  await context.jobs.repeat(retentionJob, {}, RETENTION_EVERY_MS);
  return {
    async stop() {
      stopped = true;
      await processor.stop();
    },
  };
}
