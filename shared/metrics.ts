import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** The process's Prometheus registry and the instruments shared by several roles. */
export interface Metrics {
  registry: Registry;
  httpDuration: Histogram<'method' | 'route' | 'status_code'>;
  httpRequests: Counter<'status_class'>;
  rateLimited: Counter<'bucket'>;
  visitLogPublished: Counter<'topic'>;
  visitLogDropped: Counter<'topic' | 'reason'>;
  visitLogBacklog: Gauge<'topic'>;
  visitLogWriteErrors: Counter<'operation'>;
  jobsProcessed: Counter<'job' | 'outcome'>;
  jobsStoreFailures: Counter<'operation'>;
  auditWriteFailures: Counter<string>;
  accountMailFailures: Counter<'mail'>;
  eventPublishFailures: Counter<'event'>;
  webhookAttempts: Counter<'outcome'>;
  webhookAttemptsKept: Counter;
  webhookDispatched: Counter<'event'>;
  visitsAccepted: Counter<'kind'>;
  visitsDropped: Counter<'reason' | 'topic'>;
  visitsBuffered: Gauge<'topic'>;
  visitLogDelay: Histogram<'topic'>;
  redirects: Counter<'status'>;
  linkCache: Counter<'outcome'>;
  visitsEnriched: Counter<'kind'>;
  visitsInserted: Counter<string>;
  visitsDeduplicated: Counter<string>;
  visitsDeadLettered: Counter<'reason'>;
  insertBatchSize: Histogram<string>;
  insertDuration: Histogram<string>;
  beacons: Counter<'outcome'>;
  consumerLag: Gauge<'group' | 'topic'>;
  visitSpoolMessages: Gauge<'topic'>;
  visitSpoolBytes: Gauge<'topic'>;
  visitSpoolOldestAge: Gauge<'topic'>;
  visitsOldestRaw: Gauge;
}

/** How often the event-loop delay histogram samples (prom-client's eventLoopMonitoringPrecision). */
export const EVENT_LOOP_SAMPLE_MS = 100;

/** Builds a fresh registry with default process metrics and the platform's instruments. */
export function createMetrics(): Metrics {
  const registry = new Registry();
  // The event-loop delay histogram (nodejs_eventloop_lag_*) samples with a timer: prom-client's
  // default of every 10 ms wakes an idle process 100 times a second: an idle ingest node spent about
  // 9 ms of CPU a second on it on this project's VMs, a context switch each (docs/benchmarks.md).
  // Sampled every 100 ms, every stall of 100 ms or more is still recorded; a shorter one is caught
  // in proportion to its length.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  return {
    registry,
    httpDuration: new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request duration by route pattern and status code.',
      labelNames: ['method', 'route', 'status_code'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    httpRequests: new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests answered, by status class.',
      labelNames: ['status_class'],
      registers: [registry],
    }),
    rateLimited: new Counter({
      name: 'rate_limited_total',
      help: 'Requests refused with 429, by bucket.',
      labelNames: ['bucket'],
      registers: [registry],
    }),
    visitLogPublished: new Counter({
      name: 'visit_log_published_total',
      help: 'Messages handed to the message log, by topic.',
      labelNames: ['topic'],
      registers: [registry],
    }),
    visitLogDropped: new Counter({
      name: 'visit_log_dropped_total',
      help: 'Messages the message log could not accept or buffer, by topic and reason.',
      labelNames: ['topic', 'reason'],
      registers: [registry],
    }),
    visitLogBacklog: new Gauge({
      name: 'visit_log_backlog',
      help: 'Messages waiting in the durable one-process message log or the producer buffer, by topic.',
      labelNames: ['topic'],
      registers: [registry],
    }),
    visitLogWriteErrors: new Counter({
      name: 'visit_log_write_errors_total',
      help: 'Writes the durable one-process message log failed (a full disk), by operation: publish, commit, reclaim, retention, journal (the edge journal). Alert on any.',
      labelNames: ['operation'],
      registers: [registry],
    }),
    auditWriteFailures: new Counter({
      name: 'audit_write_failures_total',
      help: 'Audit log entries that could not be written.',
      registers: [registry],
    }),
    accountMailFailures: new Counter({
      name: 'account_mail_failures_total',
      help: 'Account e-mails (password-reset links) that could not be prepared or sent through SMTP_URL, by mail. Alert on any.',
      labelNames: ['mail'],
      registers: [registry],
    }),
    webhookAttempts: new Counter({
      name: 'webhook_attempts_total',
      help: 'Webhook delivery attempts, by outcome (success, http_error: a non-2xx answer, no_response: refused, timed out or unreachable).',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    webhookAttemptsKept: new Counter({
      name: 'webhook_attempt_rows_kept_total',
      help: 'Delivery-log rows the database could not take when their attempt was made (down, a lost connection): kept in a webhook.record job and written later, instead of making the attempt again.',
      registers: [registry],
    }),
    webhookDispatched: new Counter({
      name: 'webhook_deliveries_enqueued_total',
      help: 'Deliveries enqueued by the webhook dispatcher (one per matching webhook and event), by event type.',
      labelNames: ['event'],
      registers: [registry],
    }),
    eventPublishFailures: new Counter({
      name: 'event_publish_failures_total',
      help: 'Platform events (event bus) and link-change notices that could not be published, by event type.',
      labelNames: ['event'],
      registers: [registry],
    }),
    visitsAccepted: new Counter({
      name: 'visits_accepted_total',
      help: 'Visits the ingest edge accepted for the message log, by kind (visit, attack, beacon).',
      labelNames: ['kind'],
      registers: [registry],
    }),
    visitsDropped: new Counter({
      name: 'visits_dropped_total',
      help: 'Visits and beacon messages the ingest edge could not keep, by topic and reason (buffer_full: the message log was unreachable too long; spool_full: the spool held VISIT_SPOOL_MAX_BYTES; shutdown: still buffered when the process stopped).',
      labelNames: ['reason', 'topic'],
      registers: [registry],
    }),
    visitsBuffered: new Gauge({
      name: 'visits_buffered',
      help: 'Visits and beacon messages waiting at the ingest edge for the message log, by topic.',
      labelNames: ['topic'],
      registers: [registry],
    }),
    redirects: new Counter({
      name: 'redirects_total',
      help: 'Answers of the short hosts, by status.',
      labelNames: ['status'],
      registers: [registry],
    }),
    linkCache: new Counter({
      name: 'link_cache_lookups_total',
      help: 'Redirect link-cache lookups, by outcome (hit, miss, negative).',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    visitsEnriched: new Counter({
      name: 'visits_enriched_total',
      help: 'Visits the enricher derived fields for, by resulting kind (visit, bot, attack, beacon).',
      labelNames: ['kind'],
      registers: [registry],
    }),
    visitsInserted: new Counter({
      name: 'visits_inserted_total',
      help: 'Visit rows inserted into ClickHouse (a batch redelivered whole counts again; ClickHouse drops it by its deduplication token).',
      registers: [registry],
    }),
    visitsDeduplicated: new Counter({
      name: 'visits_deduplicated_total',
      help: 'Visits of redelivered batches left out of the insert because they were already stored (or came twice in the batch).',
      registers: [registry],
    }),
    visitsDeadLettered: new Counter({
      name: 'visits_dead_lettered_total',
      help: 'Messages of visits.raw and tracker.raw sent to the dead-letter topic, by reason (undecodable, invalid, unknown_subdomain, stage_failed: a message that made a stage throw alone).',
      labelNames: ['reason'],
      registers: [registry],
    }),
    visitLogDelay: new Histogram({
      name: 'visit_log_publish_delay_seconds',
      help: "Age of a batch's oldest message when the message log acknowledged the batch (on disk, or in Kafka): the window in which an answered visit can still be lost to a crash, by topic.",
      labelNames: ['topic'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
      registers: [registry],
    }),
    insertBatchSize: new Histogram({
      name: 'visits_insert_batch_size',
      help: 'Rows per ClickHouse insert of the enricher.',
      buckets: [1, 10, 100, 500, 1_000, 2_500, 5_000, 10_000, 50_000],
      registers: [registry],
    }),
    insertDuration: new Histogram({
      name: 'visits_insert_duration_seconds',
      help: "Duration of the enricher's ClickHouse inserts.",
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
    beacons: new Counter({
      name: 'beacons_processed_total',
      help: 'Beacon messages the enricher processed, by outcome (own_visit: a visit the tracker started; state: a beacon state stored; merged: merged into its visit row).',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    consumerLag: new Gauge({
      name: 'visit_log_consumer_lag',
      help: 'Messages of a topic not yet committed by a consumer group of this process.',
      labelNames: ['group', 'topic'],
      registers: [registry],
    }),
    visitSpoolMessages: new Gauge({
      name: 'visit_spool_messages',
      help: "Visits and beacon messages on an ingest node's spool (DATA_DIR/spool) that Kafka has not acknowledged yet, by topic.",
      labelNames: ['topic'],
      registers: [registry],
    }),
    visitSpoolBytes: new Gauge({
      name: 'visit_spool_bytes',
      help: 'Bytes those messages count against VISIT_SPOOL_MAX_BYTES, by topic.',
      labelNames: ['topic'],
      registers: [registry],
    }),
    visitSpoolOldestAge: new Gauge({
      name: 'visit_spool_oldest_age_seconds',
      help: "Age of the oldest message on an ingest node's spool not yet acknowledged by Kafka, by topic (0: none).",
      labelNames: ['topic'],
      registers: [registry],
    }),
    visitsOldestRaw: new Gauge({
      name: 'visits_oldest_raw_timestamp_seconds',
      help: 'Time (Unix seconds) of the oldest raw visit kept in the analytics store (0: none), as last read by this process (the retention job, the health page).',
      registers: [registry],
    }),
    jobsProcessed: new Counter({
      name: 'jobs_processed_total',
      help: 'Background job attempts, by job name and outcome.',
      labelNames: ['job', 'outcome'],
      registers: [registry],
    }),
    jobsStoreFailures: new Counter({
      name: 'jobs_store_failures_total',
      help: 'Writes of the embedded job runner that failed (disk full, I/O error), by operation; an enqueue that failed was refused to its caller.',
      labelNames: ['operation'],
      registers: [registry],
    }),
  };
}

/**
 * Runs `beforeRead` whenever the metric is read (a scrape, `get()`), before prom-client reports it:
 * prom-client calls a metric's `collect` there. Several callers chain.
 */
export function onCollect(metric: Counter<string> | Gauge<string> | Histogram<string>, beforeRead: () => void): void {
  const target = metric as unknown as { collect?: () => unknown };
  const previous = target.collect;
  target.collect = function (this: unknown) {
    beforeRead();
    return previous?.call(this);
  };
}

/**
 * The children of a counter with one label, for a hot path (every redirect): an increment adds to
 * a plain number, handed to prom-client when the counter is read (no label hashing per request).
 */
export function counterChildren<L extends string>(counter: Counter<L>, label: L): (value: string) => { inc(amount?: number): void } {
  const children = new Map<string, { pending: number; inc(amount?: number): void }>();
  onCollect(counter, () => {
    for (const [value, child] of children) {
      if (child.pending === 0) continue;
      counter.inc({ [label]: value } as Record<L, string>, child.pending);
      child.pending = 0;
    }
  });
  return (value) => {
    let child = children.get(value);
    if (!child) {
      const created = {
        pending: 0,
        inc(amount = 1) {
          created.pending += amount;
        },
      };
      children.set(value, (child = created));
    }
    return child;
  };
}

/** What histogramChildren uses of a prom-client 15 histogram: its series by label key, its bounds and label names. */
interface HistogramSeries {
  hashMap: Record<string, { bucketValues: Record<number, number>; sum: number; count: number } | undefined>;
  upperBounds: readonly number[];
  sortedLabelNames: readonly string[];
}

/**
 * The children of a histogram, for a hot path (every request): an observation adds to plain
 * numbers, folded into prom-client's series when the histogram is read. prom-client hashes a
 * child's labels again on every observe, about 0.5 µs, a sixtieth of a redirect; this is a loop
 * over the bounds. The fold writes into prom-client's own series (HistogramSeries: the key of a
 * label set as prom-client writes it, a series it has not seen made by its public `zero`), and
 * `reset` and `remove` fold first, so that what they drop goes with them. The metrics test reads a
 * histogram fed both ways: an upgrade that changes that shape fails there, not in production.
 */
export function histogramChildren<L extends string>(histogram: Histogram<L>): (labels: Record<L, string>) => { observe(value: number): void } {
  const internals = histogram as unknown as HistogramSeries;
  const bounds = internals.upperBounds;
  type Child = { labels: Record<L, string>; key: string; counts: number[]; sum: number; count: number; observe(value: number): void };
  const children = new Map<string, Child>();
  const fold = () => {
    for (const child of children.values()) {
      if (child.count === 0) continue;
      let series = internals.hashMap[child.key];
      if (!series) {
        histogram.zero(child.labels);
        series = internals.hashMap[child.key]!;
      }
      child.counts.forEach((count, index) => {
        if (count > 0) series.bucketValues[bounds[index]!]! += count;
      });
      series.sum += child.sum;
      series.count += child.count;
      child.counts.fill(0);
      child.sum = 0;
      child.count = 0;
    }
  };
  onCollect(histogram, fold);
  // eslint-disable-next-line @typescript-eslint/unbound-method -- the originals are called with .apply(this) below
  const { reset, remove } = histogram;
  histogram.reset = function (this: Histogram<L>) {
    fold();
    reset.call(this);
  };
  histogram.remove = function (this: Histogram<L>, ...labels: unknown[]) {
    fold();
    (remove as (...args: unknown[]) => void).apply(this, labels);
  };
  return (labels) => {
    const key = internals.sortedLabelNames.map((name) => `${name}:${labels[name as L]},`).join('');
    let child = children.get(key);
    if (!child) {
      const created: Child = {
        labels,
        key,
        counts: bounds.map(() => 0),
        sum: 0,
        count: 0,
        observe(value) {
          if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
          // As prom-client: the first bound at or above the value; above them all, only +Inf counts it.
          for (let index = 0; index < bounds.length; index++) {
            if (value <= bounds[index]!) {
              created.counts[index]! += 1;
              break;
            }
          }
          created.sum += value;
          created.count += 1;
        },
      };
      children.set(key, (child = created));
    }
    return child;
  };
}

/** The sum of a metric's current values over all its label sets. */
export async function metricTotal(metric: { get(): Promise<{ values: { value: number }[] }> }): Promise<number> {
  return (await metric.get()).values.reduce((sum, entry) => sum + entry.value, 0);
}
