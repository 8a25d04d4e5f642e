import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { migrateDatabase } from '#shared/migrations/postgres.js';
import { createAccount } from '#tests/support/accounts.js';
import { closeContext, createTestContext, SERVICES_MODE } from '#tests/support/context.js';
import { createFreshDatabase, type FreshDatabase } from '#tests/support/fresh-database.js';
import { waitFor } from '#tests/support/wait.js';
import { insertWebhook } from '#tests/support/webhooks.js';
import { webhooksRepository } from '#shared/webhooks/webhooks.repository.js';
import { pruneExpired, retentionJob, startRetention } from './retention.js';
import { withRepositories } from '#tests/support/repositories.js';

// Retention of the webhook delivery log and the audit log: before it, both grew forever. The rows
// live in a database of this file's own, so that the counts are exact whatever other test files
// (and their workers' retention jobs) do meanwhile; the job runs on the suite's jobs (in process,
// or BullMQ on Redis in the services run).
const DEADLINE_MS = 30_000;
const DAY_MS = 86_400_000;

let base: Context;
let fresh: FreshDatabase;

beforeAll(async () => {
  base = await createTestContext();
  fresh = await createFreshDatabase();
  await migrateDatabase(fresh.database);
});

afterAll(async () => {
  await fresh?.drop();
  if (base) await closeContext(base);
});

/** The suite's context on this file's database, with the retention of `retention` (defaults 30 and 365 days). */
const withRetention = (retention: Partial<Context['config']['retention']> = {}): Context => ({
  ...base,
  db: fresh.database,
  config: { ...base.config, retention: { ...base.config.retention, ...retention } },
});

/** Delivery-log rows of a new webhook, one per age in days; their seq, in the same order. */
async function deliveriesAged(context: Context, days: number[]): Promise<string[]> {
  const owner = await createAccount(context);
  const { row } = await insertWebhook(context, { owner_id: owner.id, url: 'https://receiver.example/hook', events: ['visit.new'] });
  const now = Date.now();
  await webhooksRepository(context.db.db).insertAttempts(
    days.map((age) => ({
      webhook_id: row.id,
      delivery_id: randomUUID(),
      event_id: randomUUID(),
      event: 'visit.new',
      attempt: 1,
      attempted_at: new Date(now - age * DAY_MS).toISOString(),
      status_code: 200,
      latency_ms: 5,
      success: true,
      error: null,
      response_excerpt: null,
    })),
  );
  const rows = await sql<{
    seq: string;
    attempted_at: Date;
  }>`SELECT seq, attempted_at FROM webhook_deliveries WHERE webhook_id = ${row.id} ORDER BY attempted_at DESC`.execute(context.db.db);
  return rows.rows.map((entry) => entry.seq);
}

/** Audit rows, one per age in days, under a unique action; returns that action. */
async function auditAged(context: Context, days: number[]): Promise<string> {
  const action = `test.retention.${randomUUID()}`;
  for (const age of days) {
    await sql`INSERT INTO audit_log (action, created_at) VALUES (${action}, ${new Date(Date.now() - age * DAY_MS).toISOString()}::timestamptz)`.execute(
      context.db.db,
    );
  }
  return action;
}

const remainingDeliveries = async (context: Context, seqs: string[]) =>
  (
    await sql<{ seq: string }>`SELECT seq FROM webhook_deliveries WHERE seq = ANY(${seqs}::bigint[]) ORDER BY attempted_at DESC`.execute(context.db.db)
  ).rows.map((row) => row.seq);
const auditAges = async (context: Context, action: string) =>
  (
    await sql<{
      age: number;
    }>`SELECT round(extract(epoch FROM now() - created_at) / 86400)::int AS age FROM audit_log WHERE action = ${action} ORDER BY created_at DESC`.execute(
      context.db.db,
    )
  ).rows.map((row) => row.age);

describe(`retention (${SERVICES_MODE ? 'BullMQ' : 'in process'})`, () => {
  it('running the job deletes delivery-log rows older than 30 days and audit rows older than 365 days (the defaults); newer ones stay', async () => {
    const context = withRetention();
    expect(context.config.retention).toEqual({ webhookDeliveriesDays: 30, auditDays: 365, visitsMaxDays: 0 });
    // Ages in days, newest first.
    const seqs = await deliveriesAged(context, [0, 29, 31, 400]);
    const action = await auditAged(context, [0, 364, 366, 1000]);

    const retention = await startRetention(withRepositories(context));
    try {
      // A schedule declared afresh runs it at once, but one left by an earlier worker (BullMQ, or the embedded runner's folder) keeps its hour: run it now.
      await context.jobs.enqueue(retentionJob, {});
      await waitFor(async () => (await remainingDeliveries(context, seqs)).length === 2 && (await auditAges(context, action)).length === 2, DEADLINE_MS, {
        message: 'the expired rows to go',
      });
    } finally {
      await retention.stop();
    }
    expect(await remainingDeliveries(context, seqs)).toEqual(seqs.slice(0, 2));
    expect(await auditAges(context, action)).toEqual([0, 364]);
  });

  it('deletes in bounded batches: a run stops after its batches, the next run goes on', async () => {
    const context = withRetention({ webhookDeliveriesDays: 7, auditDays: 7 });
    // Rows of the test above that are older than 7 days go first: the counts below are this test's.
    await pruneExpired(withRepositories(context));
    const seqs = await deliveriesAged(context, [1, 8, 9, 10, 11, 12]);
    const action = await auditAged(context, [1, 8, 9, 10]);
    expect(await pruneExpired(withRepositories(context), { batch: 2, maxBatches: 2 })).toEqual({ webhook_deliveries: 4, audit_log: 3 });
    expect(await remainingDeliveries(context, seqs)).toHaveLength(2);
    expect(await pruneExpired(withRepositories(context), { batch: 2, maxBatches: 2 })).toEqual({ webhook_deliveries: 1, audit_log: 0 });
    expect(await remainingDeliveries(context, seqs)).toEqual(seqs.slice(0, 1));
    expect(await auditAges(context, action)).toEqual([1]);
  });

  it('0 keeps a log forever; both 0 removes the schedule', async () => {
    const context = withRetention({ webhookDeliveriesDays: 0, auditDays: 0 });
    const seqs = await deliveriesAged(context, [5000]);
    const action = await auditAged(context, [50_000]);
    expect(await pruneExpired(withRepositories(context))).toEqual({ webhook_deliveries: 0, audit_log: 0 });
    const retention = await startRetention(withRepositories(context));
    await retention.stop();
    expect(await remainingDeliveries(context, seqs)).toEqual(seqs);
    expect(await auditAges(context, action)).toEqual([50_000]);
  });
});
