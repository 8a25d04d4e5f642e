import { z } from 'zod';
import { RATE_BUCKETS, RATE_BUCKET_NAMES } from '#shared/config.js';
import { DEPENDENCIES, dependencyKinds, type Clients, type Context } from '#shared/context.js';
import { metricTotal } from '#shared/metrics.js';
import { analyticsSchemaVersion } from '#shared/migrations/clickhouse.js';
import { databaseSchemaVersion } from '#shared/migrations/postgres.js';
import { AppError, ERROR_CATALOGUE, ERROR_CODES, errorDocs } from '#shared/errors.js';
import { buildOpenApiDocument } from '#shared/http/openapi.js';
import type { RateLimiter } from '#shared/http/rate-limit.js';
import { defineRoute, type RouteDef } from '#shared/http/route.js';
import { DEFAULT_LOCALE, LOCALES, LOCALE_CODES, t } from '#shared/i18n/index.js';
import { VERSION } from '#shared/version.js';
import type { Repositories } from '#services/repositories.js';
import { assessHealth, consumerReport, probeDependencies } from './health.js';

const tags = ['discovery'];

/** Where the legacy v0 API lives: `features.legacy_v0_api` says whether any route of it is served. */
const LEGACY_PREFIX = '/api/rest.php/';

const CheckSchema = z.object({
  status: z.enum(['ok', 'down']),
  kind: z
    .string()
    .meta({ description: 'Implementation: pglite|postgres, chdb|clickhouse, lmdb|kafka (message log), lmdb|bullmq (jobs), memory|redis (cache).' }),
  latency_ms: z.number().min(0),
  error: z.string().optional(),
});

const HealthSchema = z
  .object({
    status: z.enum(['ok', 'degraded']).meta({
      description:
        '`ok`: every dependency answers and every consumer keeps up. `degraded`: a dependency that no role of this process needs to do its work is down, or a consumer is failing its batches (they are redelivered); `degraded` says what and what it means.',
    }),
    version: z.string(),
    uptime_s: z.number().int().min(0),
    roles: z.array(z.string()),
    checks: z
      .object({
        database: CheckSchema,
        analytics: CheckSchema.optional(),
        visit_log: CheckSchema,
        jobs: CheckSchema,
        cache: CheckSchema,
      } satisfies Record<(typeof DEPENDENCIES)[number], z.ZodType>)
      .meta({
        description:
          'One check per dependency this process has. `analytics` is absent from a process none of whose roles reads or writes visits (`ingest` alone): it opens no analytics store.',
      }),
    consumers: z
      .array(
        z.object({
          group: z.string(),
          topic: z.string(),
          running: z.boolean(),
          lag: z.number().int().nullable().meta({ description: 'Messages published and not yet committed by the group; null when the broker did not tell.' }),
          last_batch_at: z.iso.datetime().nullable(),
          last_error: z.string().nullable().meta({ description: 'The last failed batch (redelivered), cleared by the next success.' }),
        }),
      )
      .meta({ description: 'The message-log consumers of this process (enricher role: visits.raw and tracker.raw); empty for other roles.' }),
    spool: z
      .array(
        z.object({
          topic: z.string(),
          messages: z.number().int().min(0).meta({ description: 'Messages on the spool that Kafka has not acknowledged yet.' }),
          bytes: z.number().int().min(0).meta({ description: 'What they count against VISIT_SPOOL_MAX_BYTES.' }),
          oldest_age_s: z.number().min(0).meta({ description: 'Age of the oldest of them (0 when none); messages found at start count from the start.' }),
          last_error: z.string().nullable().meta({ description: "The forwarder's last refusal by Kafka, cleared by the next batch forwarded." }),
        }),
      )
      .optional()
      .meta({
        description:
          'Only on an ingest node with Kafka: its store-and-forward spool (DATA_DIR/spool), per topic. `status` is `degraded` while Kafka refuses the forwarded batches or the oldest spooled message is older than 10 s.',
      }),
    raw_visits: z
      .object({
        oldest_at: z.iso.datetime().nullable().meta({ description: 'The oldest raw visit kept (ClickHouse `visits`); null when none is.' }),
        checked_at: z.iso.datetime().meta({ description: 'When it was read (at most once a minute per process).' }),
      })
      .optional()
      .meta({
        description:
          'Only on a process with the analytics store, once it answers: what retention (visits_retention_days, VISITS_RETENTION_DAYS_MAX) and erasures have left. Also the metric `visits_oldest_raw_timestamp_seconds`.',
      }),
    degraded: z.array(z.object({ component: z.string(), effect: z.string() })).meta({
      description:
        'What is degraded while a fault lasts: each dependency down and each failing consumer, with what it means for redirects, the API and the pipeline. Empty when `status` is `ok`.',
    }),
  })
  .meta({ id: 'Health' });

const RateRuleSchema = z.object({
  limit: z.number().int().min(1),
  window_sec: z.number().int().min(1),
  setting: z.string(),
  keyed_by: z.string(),
});

const SchemaVersionSchema = z.object({
  applied: z.string().nullable().meta({ description: 'The newest migration this store has applied (`NNNN`); null before the first.' }),
  expected: z.string().nullable().meta({ description: 'The newest migration this build has: what `applied` is once the build started on the store.' }),
  up_to_date: z
    .boolean()
    .meta({ description: '`applied` equals `expected`. False while another node of an older or newer build is the last to have migrated.' }),
});

const StatusSchema = z
  .object({
    name: z.string(),
    version: z.string(),
    api_version: z.literal('v1'),
    started_at: z.iso.datetime(),
    uptime_s: z.number().int().min(0),
    roles: z.array(z.string()),
    features: z.object({
      storage: z.object(Object.fromEntries(DEPENDENCIES.map((name) => [name, z.string()])) as Record<(typeof DEPENDENCIES)[number], z.ZodString>),
      embedded: z.boolean().meta({ description: 'True when every dependency runs in this process (make run).' }),
      languages: z.array(z.string()),
      legacy_v0_api: z.boolean().meta({ description: 'True when this process serves the frozen legacy v0 API under /api/rest.php/.' }),
      openapi: z.string(),
      captcha: z.boolean().meta({ description: 'Whether logins need a proof-of-work CAPTCHA after repeated failures (ENABLE_CAPTCHA).' }),
    }),
    limits: z.object({
      body_limit_bytes: z.number().int(),
      rate_limits: z.object(
        Object.fromEntries(RATE_BUCKET_NAMES.map((name) => [name, RateRuleSchema])) as Record<(typeof RATE_BUCKET_NAMES)[number], typeof RateRuleSchema>,
      ),
      bruteforce: z.object({ max_attempts: z.number().int(), window_sec: z.number().int(), lockout_sec: z.number().int() }),
      captcha_after_failures: z.number().int(),
      spam: z.object({
        window_sec: z.number().int(),
        tokens_per_account: z.number().int(),
        identities_per_ip: z.number().int(),
        cooldown_sec: z.number().int(),
      }),
      session_ttl_sec: z.number().int(),
    }),
    schema: z.object({ database: SchemaVersionSchema, analytics: SchemaVersionSchema }).meta({
      description:
        'Schema versions: for Postgres (`database`, postgres/migrations) and ClickHouse (`analytics`, clickhouse/migrations), the last migration applied and the last this build expects. Migrations are forward-only; see docs/operations.md, "Backup, restore and upgrades".',
    }),
    counters: z.object({
      requests_total: z.number().int().min(0),
      rate_limited_total: z.number().int().min(0),
      visit_log_published_total: z.number().int().min(0),
      visit_log_dropped_total: z.number().int().min(0),
      jobs_processed_total: z.number().int().min(0),
    }),
  })
  .meta({ id: 'Status' });

const ErrorEntrySchema = z.object({
  code: z.enum(ERROR_CODES as [string, ...string[]]),
  status: z.number().int(),
  condition: z.string(),
  message: z.string().meta({ description: 'The localised message clients see for this code.' }),
  docs: z.string(),
});

const LanguageSchema = z.object({ code: z.string(), name: z.string(), native: z.string(), default: z.boolean() });

const IndexSchema = z
  .object({
    name: z.string(),
    version: z.string(),
    links: z.record(z.string(), z.string()),
    endpoints: z.array(z.object({ method: z.string(), path: z.string(), summary: z.string(), auth: z.string(), deprecated: z.boolean() })),
  })
  .meta({ id: 'ApiIndex' });

const OLDEST_EVERY_MS = 60_000;

/**
 * The oldest raw visit, read at most once a minute (health is probed often; `min(ts)` reads the parts'
 * min-max indexes of the partition key, but a probe should not depend on that), and set on the
 * `visits_oldest_raw_timestamp_seconds` gauge. Without the analytics store's repositories, nothing.
 */
function oldestRawVisit(context: Pick<ProbeDeps, 'metrics'>, visits: Pick<Repositories['visits'], 'oldestTs'> | undefined) {
  let last: { oldest_at: string | null; checked_at: string; at: number } | undefined;
  return async () => {
    if (!visits) return undefined;
    if (!last || Date.now() - last.at >= OLDEST_EVERY_MS) {
      const ms = await visits.oldestTs();
      context.metrics.visitsOldestRaw.set(ms === null ? 0 : ms / 1000);
      last = { oldest_at: ms === null ? null : new Date(ms).toISOString(), checked_at: new Date().toISOString(), at: Date.now() };
    }
    return { oldest_at: last.oldest_at, checked_at: last.checked_at };
  };
}

/** What health and metrics read: the clients they probe, the config, the metrics, the start time. */
export type ProbeDeps = Clients & Pick<Context, 'config' | 'metrics' | 'startedAt' | 'spool'>;

export interface DiscoveryDeps {
  /** The API's: it always has the analytics store. */
  context: ProbeDeps & Pick<Context, 'analytics'>;
  limiter: RateLimiter;
  /** All routes of the app, read at request time (the list is complete once the app is built). */
  routes: () => RouteDef[];
  /** Where the health page reads the oldest raw visit. */
  visits: Pick<Repositories['visits'], 'oldestTs'>;
}

/**
 * Health and metrics: what every process answers, whatever its roles (load balancers probe each
 * process, Prometheus scrapes each one). A process with the api role lists them among its discovery
 * routes.
 */
export function probeRoutes(context: ProbeDeps, visits?: Pick<Repositories['visits'], 'oldestTs'>): [health: RouteDef, metrics: RouteDef] {
  const { config, metrics } = context;
  const oldest = oldestRawVisit(context, visits);
  const health = defineRoute({
    operationId: 'getHealth',
    method: 'GET',
    path: '/api/v1/health',
    summary: 'Liveness plus a probe of each configured dependency with its latency',
    description:
      'Answers 503 `service_unavailable` (with `checks`, `down` and `degraded` in `error.details`) when a dependency that a role of this process cannot work without is down: the database for `api`; the database, analytics store and message log for `enricher`; the database and jobs for `worker`; none for `ingest`, which answers redirects from its link cache and keeps visits (on its spool, with Kafka). Any other dependency down, a consumer failing its batches, or the spool of an ingest node not forwarded (`spool`), answers 200 with `status: "degraded"`. Not rate-limited, for load balancers.',
    tags,
    auth: { kind: 'none' },
    bucket: null,
    response: HealthSchema,
    handler: async () => {
      const [checks, consumers] = await Promise.all([probeDependencies(context), consumerReport(context)]);
      // A failed read leaves the field out: the `analytics` check beside it says whether the store answers.
      const rawVisits = checks.analytics?.status === 'ok' ? await oldest().catch(() => undefined) : undefined;
      const spool = context.spool?.status();
      const { down, critical, degraded } = assessHealth(config.roles, checks, consumers, spool);
      if (critical) {
        throw new AppError(
          'service_unavailable',
          { checks, down, degraded, ...(spool ? { spool } : {}) },
          { messageKey: 'error.service_unavailable.dependency', params: { names: down.join(', ') } },
        );
      }
      return {
        status: degraded.length > 0 ? ('degraded' as const) : ('ok' as const),
        degraded,
        version: VERSION,
        uptime_s: Math.floor((Date.now() - context.startedAt.getTime()) / 1000),
        roles: config.roles,
        checks,
        consumers,
        ...(spool ? { spool } : {}),
        ...(rawVisits ? { raw_visits: rawVisits } : {}),
      };
    },
  });
  const metricsRoute = defineRoute({
    operationId: 'getMetrics',
    method: 'GET',
    path: '/metrics',
    summary: 'Prometheus metrics: process defaults and the request-duration histogram by route and status',
    tags,
    auth: { kind: 'none' },
    bucket: null,
    response: z.string(),
    raw: { contentType: 'text/plain; version=0.0.4; charset=utf-8', description: 'Prometheus text exposition format.' },
    handler: async () => ({ contentType: metrics.registry.contentType, body: await metrics.registry.metrics() }),
  });
  return [health, metricsRoute];
}

/** The API's discovery routes and the probes, in the order the index lists them: index, health, status, OpenAPI, errors, languages, metrics. */
export function discoveryRoutes({ context, limiter, routes, visits }: DiscoveryDeps): RouteDef[] {
  const { config, metrics } = context;
  const [health, metricsRoute] = probeRoutes(context, visits);
  let openapi: string | undefined;
  return [
    defineRoute({
      operationId: 'getIndex',
      method: 'GET',
      path: '/api/v1/',
      summary: 'API index with links to every discovery document and the list of operations',
      tags,
      auth: { kind: 'none' },
      bucket: 'default',
      response: IndexSchema,
      handler: async () => ({
        name: 'Link-tracking platform API',
        version: VERSION,
        links: {
          self: '/api/v1/',
          openapi: '/api/v1/openapi.json',
          errors: '/api/v1/errors',
          languages: '/api/v1/languages',
          health: '/api/v1/health',
          status: '/api/v1/status',
          metrics: '/metrics',
        },
        endpoints: routes().map((route) => ({
          method: route.method,
          path: route.path,
          summary: route.summary,
          auth: route.auth.kind === 'scope' ? route.auth.scope : route.auth.kind,
          deprecated: route.deprecated ?? false,
        })),
      }),
    }),
    health,
    defineRoute({
      operationId: 'getStatus',
      method: 'GET',
      path: '/api/v1/status',
      summary: 'Version, features, limits (the live configuration of all eight rate-limit buckets) and counters',
      tags,
      auth: { kind: 'none' },
      bucket: 'default',
      response: StatusSchema,
      handler: async () => {
        const kinds = { ...dependencyKinds(context), analytics: context.analytics.kind };
        return {
          name: 'linktrack',
          version: VERSION,
          api_version: 'v1' as const,
          started_at: context.startedAt.toISOString(),
          uptime_s: Math.floor((Date.now() - context.startedAt.getTime()) / 1000),
          roles: config.roles,
          features: {
            storage: kinds,
            embedded: kinds.database === 'pglite' && kinds.analytics === 'chdb' && kinds.visit_log === 'lmdb' && kinds.jobs === 'lmdb',
            languages: LOCALE_CODES,
            legacy_v0_api: routes().some((route) => route.path.startsWith(LEGACY_PREFIX)),
            openapi: '/api/v1/openapi.json',
            captcha: config.captcha.enabled,
          },
          limits: {
            body_limit_bytes: config.bodyLimit,
            rate_limits: Object.fromEntries(
              RATE_BUCKET_NAMES.map((bucket) => [
                bucket,
                {
                  limit: limiter.rules[bucket].limit,
                  window_sec: limiter.rules[bucket].windowSec,
                  setting: RATE_BUCKETS[bucket].env,
                  keyed_by: RATE_BUCKETS[bucket].keyedBy,
                },
              ]),
            ) as z.input<typeof StatusSchema>['limits']['rate_limits'],
            bruteforce: {
              max_attempts: config.bruteforce.maxAttempts,
              window_sec: config.bruteforce.windowSec,
              lockout_sec: config.bruteforce.lockoutSec,
            },
            captcha_after_failures: config.captcha.after,
            spam: {
              window_sec: config.spam.windowSec,
              tokens_per_account: config.spam.tokensPerAccount,
              identities_per_ip: config.spam.identitiesPerIp,
              cooldown_sec: config.spam.cooldownSec,
            },
            session_ttl_sec: config.sessionTtlSec,
          },
          schema: {
            database: await databaseSchemaVersion(context.db),
            analytics: await analyticsSchemaVersion(context.analytics),
          },
          counters: {
            requests_total: await metricTotal(metrics.httpRequests),
            rate_limited_total: await metricTotal(metrics.rateLimited),
            visit_log_published_total: await metricTotal(metrics.visitLogPublished),
            visit_log_dropped_total: await metricTotal(metrics.visitLogDropped),
            jobs_processed_total: await metricTotal(metrics.jobsProcessed),
          },
        };
      },
    }),
    defineRoute({
      operationId: 'getOpenApi',
      method: 'GET',
      path: '/api/v1/openapi.json',
      summary: 'The OpenAPI 3.1 document of this API, served raw (the one exception to the envelope)',
      tags,
      auth: { kind: 'none' },
      bucket: 'default',
      response: z.record(z.string(), z.unknown()).meta({ description: 'An OpenAPI 3.1 document.' }),
      raw: { contentType: 'application/json; charset=utf-8', description: 'The OpenAPI 3.1 document, not wrapped in the envelope.' },
      handler: async () => {
        openapi ??= JSON.stringify(buildOpenApiDocument(routes(), { version: VERSION, serverUrl: config.publicUrl }));
        return { contentType: 'application/json; charset=utf-8', body: openapi };
      },
    }),
    defineRoute({
      operationId: 'listErrors',
      method: 'GET',
      path: '/api/v1/errors',
      summary: 'The error catalogue: every code with its HTTP status, condition and localised message',
      tags,
      auth: { kind: 'none' },
      bucket: 'default',
      response: z.object({ errors: z.array(ErrorEntrySchema) }),
      handler: async ({ locale }) => ({
        errors: ERROR_CODES.map((code) => ({
          code,
          status: ERROR_CATALOGUE[code].status,
          condition: ERROR_CATALOGUE[code].condition,
          message: t(locale, `error.${code}`),
          docs: errorDocs(code),
        })),
      }),
    }),
    defineRoute({
      operationId: 'listLanguages',
      method: 'GET',
      path: '/api/v1/languages',
      summary: 'Supported locales for ?lang= and Accept-Language',
      tags,
      auth: { kind: 'none' },
      bucket: 'default',
      response: z.object({ languages: z.array(LanguageSchema), default: z.string() }),
      handler: async () => ({
        languages: LOCALE_CODES.map((code) => ({ code, name: LOCALES[code].name, native: LOCALES[code].native, default: code === DEFAULT_LOCALE })),
        default: DEFAULT_LOCALE,
      }),
    }),
    metricsRoute,
  ];
}
