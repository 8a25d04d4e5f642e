import { z } from 'zod';
import { memoryBudget, resolveMemoryLimit, type MemoryBudget } from './memory-budget.js';
import { RESERVED_RATE_BUCKETS } from './reserved.js';
import { parseKey } from './secrets/secret-box.js';

/** The four roles a process can run. */
export const ROLES = ['api', 'ingest', 'enricher', 'worker'] as const;
export type Role = (typeof ROLES)[number];

/**
 * The eight rate-limit buckets of the spec, in its order, with their setting names and defaults.
 * The three swarm buckets are reserved (`reserved.ts`): they limit only the 501 routes.
 */
export const RATE_BUCKETS = {
  default: { env: 'RATE_LIMIT_DEFAULT', fallback: '600:60', keyedBy: 'IP, then session, then user' },
  auth: { env: 'RATE_LIMIT_AUTH', fallback: '20:900', keyedBy: 'IP and account' },
  api: { env: 'RATE_LIMIT_API', fallback: '600:60', keyedBy: 'API token, then IP' },
  ...RESERVED_RATE_BUCKETS,
  track: { env: 'RATE_LIMIT_TRACK', fallback: '120:60', keyedBy: 'IP and visit id' },
  redirect: { env: 'RATE_LIMIT_REDIRECT', fallback: '600:60', keyedBy: 'IP and link id' },
} as const;
export type RateBucket = keyof typeof RATE_BUCKETS;
export const RATE_BUCKET_NAMES = Object.keys(RATE_BUCKETS) as RateBucket[];

export interface RateRule {
  limit: number;
  windowSec: number;
}

/** A variable's documentation: what it does, and whether the production topology must set it. */
interface VarDoc {
  doc: string;
  production?: true;
}

const emptyToUndefined = (value: unknown) => (typeof value === 'string' && value.trim() === '' ? undefined : value);
const optionalString = <T extends z.ZodType>(schema: T) => z.preprocess(emptyToUndefined, schema.optional());
const withDefault = <T extends z.ZodType>(schema: T, fallback: z.input<T>) => z.preprocess(emptyToUndefined, schema.prefault(fallback as never));

const port = z.coerce
  .number({ error: 'must be an integer from 1 to 65535' })
  .int('must be an integer from 1 to 65535')
  .min(1, 'must be an integer from 1 to 65535')
  .max(65535, 'must be an integer from 1 to 65535');

const urlWithScheme = (schemes: string[]) =>
  z.string().refine(
    (value) => {
      try {
        return schemes.includes(new URL(value).protocol.replace(/:$/, ''));
      } catch {
        return false;
      }
    },
    `must be a URL with scheme ${schemes.join(' or ')}`,
  );

const rateRule = z
  .string()
  .regex(/^\d+:\d+$/, 'must be <limit>:<window-seconds>, two positive integers such as 600:60')
  .transform((value): RateRule => {
    const [limit, windowSec] = value.split(':').map(Number) as [number, number];
    return { limit, windowSec };
  })
  .refine((rule) => rule.limit >= 1 && rule.windowSec >= 1, 'must be <limit>:<window-seconds>, both at least 1');

const boolFlag = z
  .enum(['0', '1', 'true', 'false', 'yes', 'no', 'on', 'off'], { error: 'must be one of 1, 0, true, false' })
  .transform((value) => ['1', 'true', 'yes', 'on'].includes(value));

const KEY_RULE = 'must be 32 random bytes as base64 or 64 hex digits (openssl rand -base64 32)';
const secretsKey = z.string().transform((value, ctx) => {
  const key = parseKey(value);
  if (!key) {
    ctx.addIssue({ code: 'custom', message: KEY_RULE });
    return z.NEVER;
  }
  return key;
});
const secretsKeys = z.string().transform((value, ctx) => {
  const keys = value
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map(parseKey);
  if (keys.some((key) => !key)) {
    ctx.addIssue({ code: 'custom', message: `must be a comma-separated list of keys; each ${KEY_RULE}` });
    return z.NEVER;
  }
  return keys as Buffer[];
});
const retentionDays = (max: number) =>
  z.coerce
    .number({ error: `must be a whole number of days from 0 (keep forever) to ${max}` })
    .int(`must be a whole number of days from 0 (keep forever) to ${max}`)
    .min(0, `must be a whole number of days from 0 (keep forever) to ${max}`)
    .max(max, `must be a whole number of days from 0 (keep forever) to ${max}`);

/** A comma-separated list as its trimmed, non-empty entries (TRUST_PROXY, DNS_RESOLVERS). */
const commaList = z.string().transform((value) =>
  value
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean),
);
const cidr = /^(?:\d{1,3}(?:\.\d{1,3}){3}|[0-9a-fA-F:]+)(?:\/\d{1,3})?$/;

/**
 * Every environment variable the platform reads, with its rule and its documentation.
 * The configuration table of docs/configuration.md is generated from this object (npm run docs:config).
 */
export const CONFIG_VARS = {
  NODE_ENV: [
    withDefault(z.enum(['development', 'production', 'test'], { error: 'must be development, production or test' }), 'production'),
    {
      doc: 'Only `development` shows exception detail (message and stack) in 500 answers; `production` (the default) and `test` never do, unless `DEBUG=1`. Nothing else depends on it.',
    },
  ],
  PORT: [withDefault(port, 8080), { doc: 'HTTP port of this process.' }],
  HOST: [withDefault(z.string().min(1), '0.0.0.0'), { doc: 'Interface to listen on.' }],
  BASE_DOMAIN: [
    withDefault(
      z
        .string()
        .regex(
          /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/,
          'must be a lower-case host name such as links.example.com',
        ),
      'localhost',
    ),
    { doc: 'Domain under which subdomain hosts `{name}.{BASE_DOMAIN}` serve short links.', production: true },
  ],
  PUBLIC_URL: [
    optionalString(urlWithScheme(['http', 'https'])),
    {
      doc: 'Public origin of the API (default `http://{BASE_DOMAIN}:{PORT}`); used in links of the index and error pages, and its scheme decides the session cookie: `Secure` exactly when it is `https`.',
    },
  ],
  SERVICE_ROLES: [
    withDefault(
      z
        .string()
        .transform((value) => [
          ...new Set(
            value
              .split(',')
              .map((role) => role.trim())
              .filter(Boolean),
          ),
        ])
        .pipe(z.array(z.enum(ROLES, { error: `must list roles among ${ROLES.join(', ')}` })).min(1, 'must name at least one role')),
      ROLES.join(','),
    ),
    { doc: 'Comma-separated roles this process runs: `api`, `ingest`, `enricher`, `worker`.', production: true },
  ],
  DATA_DIR: [
    withDefault(z.string().min(1), './data'),
    {
      doc: 'Folder of the embedded stores (PGlite, chDB, the durable message log and job queue on LMDB) when no server URL is set. One process at a time owns it.',
    },
  ],
  DATABASE_URL: [
    optionalString(urlWithScheme(['postgres', 'postgresql'])),
    { doc: 'PostgreSQL connection URL; without it PGlite runs under `DATA_DIR/pg`.', production: true },
  ],
  DATABASE_POOL_MAX: [withDefault(z.coerce.number().int().min(1).max(200), 10), { doc: 'Maximum connections of the Postgres pool.' }],
  CLICKHOUSE_URL: [
    optionalString(urlWithScheme(['http', 'https'])),
    { doc: 'ClickHouse HTTP URL (user, password and database may be in the URL); without it chDB runs under `DATA_DIR/chdb`.', production: true },
  ],
  MEMORY_LIMIT_MB: [
    optionalString(
      z.coerce
        .number({ error: 'must be an integer from 256 to 1048576' })
        .int('must be an integer from 256 to 1048576')
        .min(256, 'must be an integer from 256 to 1048576')
        .max(1_048_576, 'must be an integer from 256 to 1048576'),
    ),
    {
      doc: "Memory (MiB) this process may use; unset, the limit of its cgroup (v2 `memory.max`, v1 `memory.limit_in_bytes`), else 1024 (or the machine's memory when smaller). The embedded engines are sized from it: chDB's caches, merge and thread pools, threads per query and the size past which a query spills to disk, and PGlite's `shared_buffers` (docs/configuration.md, Memory budget).",
    },
  ],
  KAFKA_BROKERS: [
    optionalString(
      z
        .string()
        .regex(/^[A-Za-z0-9.\-[\]:]+:\d+(?:,[A-Za-z0-9.\-[\]:]+:\d+)*$/, 'must be a comma-separated list of host:port')
        .transform((value) => value.split(',')),
    ),
    {
      doc: 'Comma-separated Kafka brokers (`host:port`); without them the message log is durable on LMDB under `DATA_DIR/log`, in this process.',
      production: true,
    },
  ],
  VISIT_LOG_COMMIT_MS: [
    withDefault(z.coerce.number().int().min(0).max(1000), 50),
    {
      doc: "Group commit of the durable message log (without Kafka) and of an ingest node's spool (with Kafka). Writes of this many milliseconds share one LMDB transaction (committed, then flushed to disk with fsync), so a visit is on disk within about twice this long after its redirect. Each commit costs about 0.7 ms of CPU whatever it holds: at 5 ms a saturated edge answers a fifth fewer redirects, at 50 ms as many as with no log (docs/operations.md, Durability). 0 commits every turn of the event loop.",
    },
  ],
  DISK_MIN_FREE_MB: [
    withDefault(z.coerce.number().int().min(0).max(1_000_000), 256),
    {
      doc: 'Free space (MiB) the durable message log and job queue (without Kafka or Redis) and an ingest node\'s spool (with Kafka) keep on the disk of `DATA_DIR`. Below it they refuse new messages (counted in `visit_log_dropped_total{reason="disk_full"}`, `/api/v1/health` degraded) rather than meet a full disk; the edge buffers meanwhile.',
    },
  ],
  VISIT_LOG_CAPACITY: [
    withDefault(z.coerce.number().int().min(1_000).max(1_000_000_000), 1_000_000),
    {
      doc: 'Without Kafka: unconsumed messages a topic of the durable message log holds (about 0.6 KB of disk each). Past it the edge buffers, then counts drops in `visits_dropped_total`; the dead-letter topic gives its oldest messages way instead.',
    },
  ],
  VISIT_JOURNAL: [
    withDefault(boolFlag, '1'),
    {
      doc: '`1`: an ingest node writes the visits and beacons it takes to a journal file in the folder of its durable log (`DATA_DIR/log`, or `DATA_DIR/spool` with Kafka), one write per event-loop iteration, without fsync: a process killed with `kill -9` loses only what it answered in the iteration the kill interrupted; a power cut loses up to the publish delay (about two `VISIT_LOG_COMMIT_MS`). `0` leaves them in memory until the log commits them: a `kill -9` loses that delay too (docs/operations.md, Durability).',
    },
  ],
  VISIT_SPOOL_MAX_BYTES: [
    withDefault(z.coerce.number().int().min(65_536).max(Number.MAX_SAFE_INTEGER), 1_073_741_824),
    {
      doc: 'With Kafka: disk budget (bytes) of an ingest node\'s spool under `DATA_DIR/spool`, where every visit and beacon is written before it is forwarded to Kafka (about 0.4 KB a visit: 1 GiB holds about 2.5 million, a Kafka outage of two minutes at 20 000 visits/s). Past it visits are counted in `visits_dropped_total{reason="spool_full"}`. The disk must hold it above `DISK_MIN_FREE_MB` (a warning at start says when it does not).',
    },
  ],
  KAFKA_CLIENT_ID: [withDefault(z.string().min(1), 'linktrack'), { doc: 'Kafka client id.' }],
  KAFKA_PACK_MESSAGES: [
    withDefault(z.coerce.number().int().min(1).max(10_000), 500),
    {
      doc: "With Kafka: most visits (or beacons) of one link an ingest node packs into one Kafka record of `visits.raw` (`tracker.raw`), their values joined by line feeds under the header `lt-packed`; Kafka's cost is per record. 1 sends one record a visit, as releases before this setting did; enrichers read both, so upgrade them before ingest nodes (docs/operations.md).",
    },
  ],
  KAFKA_TOPIC_PREFIX: [
    withDefault(z.string().regex(/^[A-Za-z0-9._-]*$/, 'must contain only letters, digits, dot, underscore and hyphen'), ''),
    { doc: 'Prefix of every topic and consumer-group name (to share a cluster between environments).' },
  ],
  REDIS_URL: [
    optionalString(urlWithScheme(['redis', 'rediss'])),
    {
      doc: 'Redis URL for BullMQ jobs, shared rate-limit counters and pub/sub; without it jobs are durable on LMDB under `DATA_DIR/jobs` and the other two are in-process.',
      production: true,
    },
  ],
  REDIS_PREFIX: [
    withDefault(z.string().regex(/^[A-Za-z0-9._-]{1,40}$/, 'must be 1 to 40 letters, digits, dot, underscore and hyphen'), 'lt'),
    { doc: 'Prefix of every Redis key and BullMQ queue (to share a Redis between environments).' },
  ],
  ADMIN_EMAIL: [optionalString(z.email('must be an e-mail address')), { doc: 'E-mail of the staff admin created on first start when there is no user.' }],
  ADMIN_PASSWORD: [
    optionalString(z.string().min(12, 'must be at least 12 characters')),
    { doc: 'Password of that admin (a common or easily guessed one stops the first start); without it a generated password is printed once.' },
  ],
  TRUST_PROXY: [
    withDefault(commaList.pipe(z.array(z.string().regex(cidr, 'must be comma-separated IP addresses or CIDR ranges'))), ''),
    { doc: 'Comma-separated CIDRs of reverse proxies whose `X-Forwarded-For` is trusted (default none).' },
  ],
  PUBLIC_PAGES_UPSTREAM: [
    optionalString(urlWithScheme(['http', 'https'])),
    {
      doc: "Origin of the API nodes (a load balancer, or one node) an ingest node without the api role forwards its short hosts' public pages to (`GET`/`HEAD /` of `{name}.{BASE_DOMAIN}`): it has no analytics store to render them from. The original Host goes with them, and the visitor's address in `X-Forwarded-For` (list the ingest nodes in the API nodes' `TRUST_PROXY`). Unset on such a node, those pages answer 503 `service_unavailable` and the start-up log says why; a process with the api role renders them itself and ignores it.",
    },
  ],
  PUBLIC_PAGES_UPSTREAM_TIMEOUT_MS: [
    withDefault(z.coerce.number().int().min(100).max(120_000), 10_000),
    {
      doc: 'Longest an ingest node waits for `PUBLIC_PAGES_UPSTREAM` to connect, to answer, and between two parts of its answer; past it the page answers 503 `service_unavailable`.',
    },
  ],
  BODY_LIMIT: [
    withDefault(
      z.coerce
        .number()
        .int()
        .min(1024, 'must be at least 1024 bytes')
        .max(64 * 1024 * 1024, 'must be at most 67108864 bytes'),
      1024 * 1024,
    ),
    { doc: 'Largest accepted request body in bytes (413 `payload_too_large` above).' },
  ],
  LOG_LEVEL: [
    withDefault(
      z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], { error: 'must be fatal, error, warn, info, debug, trace or silent' }),
      'info',
    ),
    { doc: 'pino log level.' },
  ],
  DEBUG: [
    withDefault(boolFlag, '0'),
    { doc: '`1` shows exception detail (message and stack) in 500 answers whatever NODE_ENV says; never set it where clients are not trusted.' },
  ],
  SESSION_TTL: [
    withDefault(z.coerce.number().int().min(60, 'must be at least 60 seconds').max(31_536_000, 'must be at most 31536000 seconds (a year)'), 1_209_600),
    { doc: 'Lifetime of a login session in seconds (default 14 days).' },
  ],
  BRUTEFORCE_MAX_ATTEMPTS: [
    withDefault(z.coerce.number().int().min(1, 'must be an integer of at least 1').max(1000, 'must be at most 1000'), 5),
    { doc: 'Failed logins for one account (any submitted e-mail) within BRUTEFORCE_WINDOW that lock it.' },
  ],
  BRUTEFORCE_WINDOW: [
    withDefault(z.coerce.number().int().min(1, 'must be an integer of at least 1 second').max(86_400, 'must be at most 86400 seconds'), 900),
    { doc: 'Window, in seconds, in which failed logins are counted.' },
  ],
  BRUTEFORCE_LOCKOUT: [
    withDefault(z.coerce.number().int().min(1, 'must be an integer of at least 1 second').max(86_400, 'must be at most 86400 seconds'), 900),
    {
      doc: 'How long, in seconds, a locked account refuses logins (429 with Retry-After); a browser that signed in before counts and locks on its own (device cookie).',
    },
  ],
  ENABLE_CAPTCHA: [withDefault(boolFlag, '0'), { doc: '`1` requires a solved proof-of-work CAPTCHA (ALTCHA, self-hosted) after CAPTCHA_AFTER failed logins.' }],
  CAPTCHA_AFTER: [
    withDefault(z.coerce.number().int().min(0, 'must be an integer of at least 0').max(1000, 'must be at most 1000'), 2),
    { doc: 'Failed logins of an account after which a CAPTCHA is required (with ENABLE_CAPTCHA).' },
  ],
  CAPTCHA_SECRET: [
    optionalString(z.string().min(32, 'must be at least 32 characters')),
    { doc: 'HMAC key of CAPTCHA challenges; set the same value on every API node (default: random per process).' },
  ],
  TRACKER_SECRET: [
    optionalString(z.string().min(32, 'must be at least 32 characters')),
    { doc: "HMAC key of the tracker's consent tokens (default: generated once and kept in Postgres, shared by every node)." },
  ],
  TRACKER_CONSENT_TTL: [
    withDefault(z.coerce.number().int().min(60, 'must be at least 60 seconds').max(86_400, 'must be at most 86400 seconds'), 1800),
    { doc: 'Lifetime, in seconds, of a consent token: the tracker asks `/tracker/consent` again after it.' },
  ],
  SPAM_WINDOW: [
    withDefault(z.coerce.number().int().min(10, 'must be at least 10 seconds').max(86_400, 'must be at most 86400 seconds'), 600),
    { doc: 'Window, in seconds, of the anti-spam rules below.' },
  ],
  SPAM_TOKENS_PER_ACCOUNT: [
    withDefault(z.coerce.number().int().min(2, 'must be an integer of at least 2').max(1000, 'must be at most 1000'), 3),
    { doc: 'Distinct tokens of one account that hit a rate limit within SPAM_WINDOW: the account is sharding its limit (429 `spam_detected`).' },
  ],
  SPAM_IDENTITIES_PER_IP: [
    withDefault(z.coerce.number().int().min(2, 'must be an integer of at least 2').max(100_000, 'must be at most 100000'), 50),
    { doc: 'Distinct accounts, tokens or login e-mails seen from one IP within SPAM_WINDOW: the IP is cycling identities (429 `spam_detected`).' },
  ],
  SPAM_COOLDOWN: [
    withDefault(z.coerce.number().int().min(1, 'must be an integer of at least 1 second').max(604_800, 'must be at most 604800 seconds'), 900),
    { doc: 'How long, in seconds, an identity caught by an anti-spam rule is answered 429 `spam_detected`.' },
  ],
  LINK_CACHE_SIZE: [
    withDefault(z.coerce.number().int().min(100).max(10_000_000), 100_000),
    { doc: 'Links an ingest node keeps in memory for redirects (least recently used go first); warmed with the newest at start.' },
  ],
  VISIT_BUFFER_SIZE: [
    withDefault(z.coerce.number().int().min(100).max(10_000_000), 100_000),
    {
      doc: 'Visits an ingest node holds in memory while its log refuses them (the durable log full or its disk under `DISK_MIN_FREE_MB`); beyond it visits are counted in `visits_dropped_total{reason="buffer_full"}`. With Kafka, visits wait on the spool during an outage (`VISIT_SPOOL_MAX_BYTES`), not here.',
    },
  ],
  ENRICHER_BATCH_SIZE: [
    withDefault(z.coerce.number().int().min(1).max(100_000), 10_000),
    { doc: 'Most visits the enricher inserts into ClickHouse in one batch.' },
  ],
  ENRICHER_BATCH_WAIT_MS: [
    withDefault(z.coerce.number().int().min(0).max(10_000), 500),
    {
      doc: 'Longest the enricher waits for a batch to fill before inserting what it has (0: at once); with `ENRICHER_INSERT_INTERVAL_MS`, bounds the delay from redirect to row.',
    },
  ],
  ENRICHER_INSERT_INTERVAL_MS: [
    optionalString(z.coerce.number().int().min(0).max(60_000)),
    {
      doc: 'Least time from the start of one insert of a batch smaller than `ENRICHER_BATCH_SIZE` to the start of the next, for each of the enricher’s two consumers (visits, beacons) (default: twice `ENRICHER_BATCH_WAIT_MS`, so 1 000 ms, about one insert a second as ClickHouse advises). A full batch, or one read from a backlog, is inserted at once. The insert rate then does not depend on how fast the enricher stores (fewer, larger parts to merge). A visit waits for its insert at most the longer of this interval and the insert before it plus `ENRICHER_BATCH_WAIT_MS`.',
    },
  ],
  BURST_MAX_VISITS: [
    withDefault(z.coerce.number().int().min(0).max(100_000, 'must be at most 100000'), 20),
    {
      doc: 'Visits one visitor (address and user agent) may make to one link within BURST_WINDOW; those beyond are a burst: classified as bots (`burst`), not counted as people, and the first raises `security.suspicious` (0: off).',
    },
  ],
  BURST_WINDOW: [
    withDefault(z.coerce.number().int().min(1, 'must be an integer of at least 1 second').max(3_600, 'must be at most 3600 seconds'), 10),
    { doc: 'Window, in seconds of visit time, in which BURST_MAX_VISITS is counted.' },
  ],
  WEBHOOK_ALLOWLIST: [
    withDefault(
      z
        .string()
        .transform((value) =>
          value
            .split(',')
            .map((entry) => entry.trim().toLowerCase())
            .filter(Boolean),
        )
        .pipe(
          z.array(
            z
              .string()
              .regex(
                /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*|(?:\d{1,3}(?:\.\d{1,3}){3}|[0-9a-f:]+)(?:\/\d{1,3})?)$/,
                'must be comma-separated host names, IP addresses or CIDR ranges',
              ),
          ),
        ),
      '',
    ),
    {
      doc: 'Comma-separated host names and CIDR ranges that webhooks may reach although internal (loopback, private, …): for self-hosted receivers. Cloud metadata endpoints stay refused. Their response bodies are never shown in the delivery log.',
    },
  ],
  WEBHOOK_RETRY_BASE_MS: [
    withDefault(z.coerce.number().int().min(10, 'must be at least 10 ms').max(3_600_000, 'must be at most 3600000 ms'), 60_000),
    {
      doc: 'Wait before the first retry of a failed webhook delivery; later retries wait 4, 16 and 64 times it (±20 % jitter). Default: 1, 4, 16 and 64 minutes.',
    },
  ],
  WEBHOOK_TIMEOUT_MS: [
    withDefault(z.coerce.number().int().min(100, 'must be at least 100 ms').max(15_000, 'must be at most 15000 ms'), 10_000),
    { doc: 'Longest a webhook delivery attempt may take (connect, send and answer); beyond it the attempt fails.' },
  ],
  WEBHOOK_CONCURRENCY: [withDefault(z.coerce.number().int().min(1).max(1000), 64), { doc: 'Webhook deliveries one worker process makes at once.' }],
  WEBHOOK_CONCURRENCY_PER_WEBHOOK: [
    withDefault(z.coerce.number().int().min(1).max(1000), 8),
    { doc: "Deliveries to one webhook one worker process makes at once; a busy webhook waits for its own slots instead of taking everyone's." },
  ],
  WEBHOOK_QUEUE_HIGH_WATER: [
    withDefault(z.coerce.number().int().min(10, 'must be at least 10').max(1_000_000, 'must be at most 1000000'), 10_000),
    {
      doc: 'Delivery jobs ready to run beyond which the dispatcher takes no more events from the events topic: a backlog of deliveries waits in Kafka (or the in-process log), not in Redis, and the dispatcher does not spend CPU enqueueing what workers cannot send yet. Jobs waiting for a retry, or put back because their webhook had no free slot, are not counted.',
    },
  ],
  WORKER_NICE: [
    withDefault(z.coerce.number().int().min(0, 'must be from 0 to 19').max(19, 'must be from 0 to 19'), 19),
    {
      doc: 'CPU scheduling priority (nice value) a process running the worker role alone lowers itself to; the default is the lowest: on a host shared with ingest or enricher processes, webhook deliveries and other jobs take the CPU those leave and catch up when it is free (a backlog waits in the events topic). 0 keeps the priority it was started with; a process running other roles too keeps it.',
    },
  ],
  SECRETS_KEY: [
    optionalString(secretsKey),
    {
      doc: 'Key that encrypts webhook signing secrets and TOTP secrets (two-factor sign-in) in Postgres (AES-256-GCM): 32 random bytes as base64 or 64 hex digits (`openssl rand -base64 32`). Required with `DATABASE_URL` for processes running the api or worker role (every such node needs the same key); without `DATABASE_URL` a key is generated on first start into `DATA_DIR/secrets.key` (mode 0600) and reused. docs/operations.md, "Secrets at rest and retention", tells how to rotate it.',
    },
  ],
  SECRETS_KEY_PREVIOUS: [
    withDefault(secretsKeys, ''),
    {
      doc: 'Comma-separated earlier values of SECRETS_KEY, used only to decrypt while the key rotates: at start the api and worker roles re-encrypt under SECRETS_KEY every secret sealed with one of them.',
    },
  ],
  WEBHOOK_DELIVERY_RETENTION_DAYS: [
    withDefault(retentionDays(3650), 30),
    {
      doc: "Days a webhook delivery-log row (`webhook_deliveries`) is kept; older rows are deleted by the worker's hourly retention job. 0 keeps them forever.",
    },
  ],
  AUDIT_RETENTION_DAYS: [
    withDefault(retentionDays(36_500), 365),
    { doc: "Days an audit-log row (`audit_log`) is kept; older rows are deleted by the worker's hourly retention job. 0 keeps them forever." },
  ],
  VISITS_RETENTION_DAYS_MAX: [
    withDefault(retentionDays(36_500), 0),
    {
      doc: "Most days any subdomain keeps its raw visits (ClickHouse `visits`): an owner's `visits_retention_days` may not exceed it, and a subdomain without one keeps them this long. Older rows are deleted by the worker's hourly retention job; the statistics keep counting them. 0: no maximum (a subdomain without `visits_retention_days` keeps them forever).",
    },
  ],
  SMTP_URL: [
    optionalString(urlWithScheme(['smtp', 'smtps'])),
    {
      doc:
        'SMTP server for e-mail notifications and password-reset links (`smtp://user:password@host:587`, `smtps://…:465`); without it notifications ' +
        'are only shown in the dashboard, and staff issue reset links (POST /api/v1/users/{id}/password-reset) instead of mail.',
    },
  ],
  DNS_RESOLVERS: [
    withDefault(
      commaList.pipe(
        z.array(
          z
            .string()
            .regex(
              /^(?:\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?|[0-9A-Fa-f:]+|\[[0-9A-Fa-f:]+\](?::\d{1,5})?)$/,
              'must be comma-separated IP addresses, each with an optional port (`10.0.0.2`, `127.0.0.1:5353`, `[::1]:53`)',
            ),
        ),
      ),
      '',
    ),
    {
      doc: "DNS servers that verify custom domains' TXT records, comma-separated, each an IP address with an optional port (`1.1.1.1,8.8.8.8`, `127.0.0.1:5353`); empty: the system's resolvers. A resolver that caches negative answers delays a verification by its TTL.",
    },
  ],
  DOMAIN_RECHECK_HOURS: [
    withDefault(z.coerce.number().int().min(1, 'must be at least 1 hour').max(720, 'must be at most 720 hours'), 6),
    { doc: "Hours between two checks of a served custom domain's TXT record by the worker (re-verification)." },
  ],
  DOMAIN_GRACE_HOURS: [
    withDefault(z.coerce.number().int().min(0).max(2_160, 'must be at most 2160 hours'), 72),
    {
      doc: 'Hours a verified custom domain stays served after its TXT record was first found missing; the owner is notified at once and again when it lapses. 0: it lapses at the first failed check.',
    },
  ],
  SMTP_FROM: [
    optionalString(z.string().min(3).max(200)),
    { doc: 'Sender of notification and password-reset e-mails (default `linktrack <noreply@{BASE_DOMAIN}>`).' },
  ],
  PASSWORD_RESET_PER_ADDRESS: [
    withDefault(rateRule, '3:3600'),
    {
      doc:
        'Password-reset requests (POST /auth/password-reset) per submitted e-mail address, existing or not, as `<limit>:<window-seconds>`; ' +
        'per IP they count in the auth bucket (RATE_LIMIT_AUTH).',
    },
  ],
  SHUTDOWN_TIMEOUT_MS: [
    withDefault(z.coerce.number().int().min(100).max(120_000), 10_000),
    { doc: 'Longest graceful drain on SIGTERM before the process exits.' },
  ],
  ...(Object.fromEntries(
    Object.entries(RATE_BUCKETS).map(([bucket, { env, fallback, keyedBy }]) => [
      env,
      [withDefault(rateRule, fallback), { doc: `Rate limit of the ${bucket} bucket (keyed by ${keyedBy}), as \`<limit>:<window-seconds>\`.` }],
    ]),
  ) as unknown as Record<(typeof RATE_BUCKETS)[RateBucket]['env'], [z.ZodType<RateRule>, VarDoc]>),
} satisfies Record<string, readonly [z.ZodType, VarDoc]>;

export type ConfigVar = keyof typeof CONFIG_VARS;

const envSchema = z.object(
  Object.fromEntries(Object.entries(CONFIG_VARS).map(([name, [schema]]) => [name, schema])) as {
    [K in ConfigVar]: (typeof CONFIG_VARS)[K][0];
  },
);

type Env = z.output<typeof envSchema>;

export interface Config {
  env: Env['NODE_ENV'];
  /** Exception detail in 500 answers: only when asked for (DEBUG=1 or NODE_ENV=development). */
  errorDetail: boolean;
  port: number;
  host: string;
  baseDomain: string;
  publicUrl: string;
  /** The session cookie is `Secure`: PUBLIC_URL is https (plain http on localhost keeps signing in). */
  secureCookies: boolean;
  roles: Role[];
  dataDir: string;
  database: { kind: 'pglite'; dir: string; /** Unset: 32 MiB. */ sharedBuffersMb?: number } | { kind: 'postgres'; url: string; poolMax: number };
  analytics: { kind: 'chdb'; dir: string; /** Unset: the engine's own defaults. */ budget?: MemoryBudget['chdb'] } | { kind: 'clickhouse'; url: string };
  /** What this process may use and the embedded engines' sizes derived from it (MEMORY_LIMIT_MB). */
  memory: MemoryBudget;
  messageLog:
    | { kind: 'lmdb'; dir: string; commitDelayMs: number; capacity: number; minFreeBytes: number }
    | { kind: 'kafka'; brokers: string[]; clientId: string; topicPrefix: string; packMessages: number };
  /** An ingest node's store-and-forward spool (with Kafka; shared/message-log/spool.ts). */
  spool: { dir: string; maxBytes: number; commitDelayMs: number; minFreeBytes: number };
  /** Folder of the durable one-process job queue (without REDIS_URL). */
  jobs: { dir: string; minFreeBytes: number };
  redisUrl: string | undefined;
  redisPrefix: string;
  admin: { email: string | undefined; password: string | undefined };
  trustProxy: string[];
  /** Where an ingest node without the api role forwards its short hosts' public pages (PUBLIC_PAGES_UPSTREAM), and how long it waits. */
  publicPages: { upstream: string | undefined; timeoutMs: number };
  bodyLimit: number;
  logLevel: Env['LOG_LEVEL'];
  shutdownTimeoutMs: number;
  linkCacheSize: number;
  enricherBatch: { size: number; waitMs: number; intervalMs: number };
  burst: { maxVisits: number; windowSec: number };
  visitBufferSize: number;
  /** Whether the edge journals each visit it takes before answering (VISIT_JOURNAL). */
  visitJournal: boolean;
  sessionTtlSec: number;
  bruteforce: { maxAttempts: number; windowSec: number; lockoutSec: number };
  captcha: { enabled: boolean; after: number; secret: string | undefined };
  tracker: { secret: string | undefined; consentTtlSec: number };
  spam: { windowSec: number; tokensPerAccount: number; identitiesPerIp: number; cooldownSec: number };
  webhooks: { allowlist: string[]; retryBaseMs: number; timeoutMs: number; concurrency: number; perWebhook: number; queueHighWater: number };
  /** Nice value a worker-only process lowers itself to (WORKER_NICE). */
  workerNice: number;
  smtp: { url: string; from: string } | undefined;
  /** Custom domains: the resolvers of their TXT checks (empty: the system's), re-verification period and grace, in hours. */
  domains: { resolvers: string[]; recheckHours: number; graceHours: number };
  /** Password-reset requests per submitted address and window. */
  passwordResetPerAddress: RateRule;
  /**
   * Keys of secrets at rest: the configured key and earlier ones, and the key file of the embedded
   * mode (used when no key is configured; when one is, a key file found there still opens what it sealed).
   */
  secrets: { key: Buffer | undefined; previous: Buffer[]; keyFile: string | undefined };
  /** Days rows are kept (0: forever). */
  retention: { webhookDeliveriesDays: number; auditDays: number; visitsMaxDays: number };
  rateLimits: Record<RateBucket, RateRule>;
}

/** A configuration that cannot start the platform; the message is one line naming variable and rule. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

const shown = (value: unknown) => (value === undefined ? 'unset' : JSON.stringify(value).slice(0, 80));

/** Parses the environment once into the typed configuration, or throws ConfigError. */
export function loadConfig(source: Record<string, string | undefined> = process.env): Config {
  const raw = Object.fromEntries(Object.keys(CONFIG_VARS).map((name) => [name, source[name]]));
  const parsed = envSchema.safeParse(raw);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => {
      const name = String(issue.path[0] ?? '');
      const secret = /PASSWORD|URL|SECRET/.test(name);
      return `${name} ${issue.message} (got ${secret && raw[name] !== undefined ? 'a value' : shown(raw[name])})`;
    });
    throw new ConfigError(`invalid configuration: ${lines.join('; ')}`);
  }
  const env = parsed.data;
  if (env.ADMIN_PASSWORD && !env.ADMIN_EMAIL) {
    throw new ConfigError('invalid configuration: ADMIN_EMAIL must be set when ADMIN_PASSWORD is set');
  }
  // Nodes sharing a Postgres must share the key: a key generated per node would seal what the others cannot open.
  if (env.DATABASE_URL && !env.SECRETS_KEY && env.SERVICE_ROLES.some((role) => role === 'api' || role === 'worker')) {
    throw new ConfigError(
      'invalid configuration: SECRETS_KEY must be set when DATABASE_URL is set and this process runs the api or worker role ' +
        '(the same key on every node; generate one with: openssl rand -base64 32)',
    );
  }
  const rateLimits = Object.fromEntries(RATE_BUCKET_NAMES.map((bucket) => [bucket, env[RATE_BUCKETS[bucket].env]])) as Record<RateBucket, RateRule>;
  const dataDir = env.DATA_DIR;
  const limit = resolveMemoryLimit(env.MEMORY_LIMIT_MB);
  const memory = memoryBudget(limit.limitMb, limit.source);
  const publicUrl = (env.PUBLIC_URL ?? `http://${env.BASE_DOMAIN}:${env.PORT}`).replace(/\/+$/, '');
  return {
    env: env.NODE_ENV,
    errorDetail: env.DEBUG || env.NODE_ENV === 'development',
    port: env.PORT,
    host: env.HOST,
    baseDomain: env.BASE_DOMAIN,
    publicUrl,
    secureCookies: publicUrl.startsWith('https:'),
    roles: env.SERVICE_ROLES,
    dataDir,
    database: env.DATABASE_URL
      ? { kind: 'postgres', url: env.DATABASE_URL, poolMax: env.DATABASE_POOL_MAX }
      : { kind: 'pglite', dir: `${dataDir}/pg`, sharedBuffersMb: memory.pgliteSharedBuffersMb },
    analytics: env.CLICKHOUSE_URL ? { kind: 'clickhouse', url: env.CLICKHOUSE_URL } : { kind: 'chdb', dir: `${dataDir}/chdb`, budget: memory.chdb },
    memory,
    messageLog: env.KAFKA_BROKERS
      ? { kind: 'kafka', brokers: env.KAFKA_BROKERS, clientId: env.KAFKA_CLIENT_ID, topicPrefix: env.KAFKA_TOPIC_PREFIX, packMessages: env.KAFKA_PACK_MESSAGES }
      : {
          kind: 'lmdb',
          dir: `${dataDir}/log`,
          commitDelayMs: env.VISIT_LOG_COMMIT_MS,
          capacity: env.VISIT_LOG_CAPACITY,
          minFreeBytes: env.DISK_MIN_FREE_MB * 1_048_576,
        },
    spool: {
      dir: `${dataDir}/spool`,
      maxBytes: env.VISIT_SPOOL_MAX_BYTES,
      commitDelayMs: env.VISIT_LOG_COMMIT_MS,
      minFreeBytes: env.DISK_MIN_FREE_MB * 1_048_576,
    },
    jobs: { dir: `${dataDir}/jobs`, minFreeBytes: env.DISK_MIN_FREE_MB * 1_048_576 },
    redisUrl: env.REDIS_URL,
    redisPrefix: env.REDIS_PREFIX,
    admin: { email: env.ADMIN_EMAIL, password: env.ADMIN_PASSWORD },
    trustProxy: env.TRUST_PROXY,
    publicPages: { upstream: env.PUBLIC_PAGES_UPSTREAM?.replace(/\/+$/, ''), timeoutMs: env.PUBLIC_PAGES_UPSTREAM_TIMEOUT_MS },
    bodyLimit: env.BODY_LIMIT,
    logLevel: env.LOG_LEVEL,
    shutdownTimeoutMs: env.SHUTDOWN_TIMEOUT_MS,
    linkCacheSize: env.LINK_CACHE_SIZE,
    enricherBatch: {
      size: env.ENRICHER_BATCH_SIZE,
      waitMs: env.ENRICHER_BATCH_WAIT_MS,
      intervalMs: env.ENRICHER_INSERT_INTERVAL_MS ?? 2 * env.ENRICHER_BATCH_WAIT_MS,
    },
    burst: { maxVisits: env.BURST_MAX_VISITS, windowSec: env.BURST_WINDOW },
    visitBufferSize: env.VISIT_BUFFER_SIZE,
    visitJournal: env.VISIT_JOURNAL,
    sessionTtlSec: env.SESSION_TTL,
    bruteforce: { maxAttempts: env.BRUTEFORCE_MAX_ATTEMPTS, windowSec: env.BRUTEFORCE_WINDOW, lockoutSec: env.BRUTEFORCE_LOCKOUT },
    captcha: { enabled: env.ENABLE_CAPTCHA, after: env.CAPTCHA_AFTER, secret: env.CAPTCHA_SECRET },
    tracker: { secret: env.TRACKER_SECRET, consentTtlSec: env.TRACKER_CONSENT_TTL },
    spam: {
      windowSec: env.SPAM_WINDOW,
      tokensPerAccount: env.SPAM_TOKENS_PER_ACCOUNT,
      identitiesPerIp: env.SPAM_IDENTITIES_PER_IP,
      cooldownSec: env.SPAM_COOLDOWN,
    },
    webhooks: {
      allowlist: env.WEBHOOK_ALLOWLIST,
      retryBaseMs: env.WEBHOOK_RETRY_BASE_MS,
      timeoutMs: env.WEBHOOK_TIMEOUT_MS,
      concurrency: env.WEBHOOK_CONCURRENCY,
      perWebhook: env.WEBHOOK_CONCURRENCY_PER_WEBHOOK,
      queueHighWater: env.WEBHOOK_QUEUE_HIGH_WATER,
    },
    workerNice: env.WORKER_NICE,
    smtp: env.SMTP_URL ? { url: env.SMTP_URL, from: env.SMTP_FROM ?? `linktrack <noreply@${env.BASE_DOMAIN}>` } : undefined,
    domains: { resolvers: env.DNS_RESOLVERS, recheckHours: env.DOMAIN_RECHECK_HOURS, graceHours: env.DOMAIN_GRACE_HOURS },
    passwordResetPerAddress: env.PASSWORD_RESET_PER_ADDRESS,
    secrets: { key: env.SECRETS_KEY, previous: env.SECRETS_KEY_PREVIOUS, keyFile: env.DATABASE_URL ? undefined : `${dataDir}/secrets.key` },
    retention: {
      webhookDeliveriesDays: env.WEBHOOK_DELIVERY_RETENTION_DAYS,
      auditDays: env.AUDIT_RETENTION_DAYS,
      visitsMaxDays: env.VISITS_RETENTION_DAYS_MAX,
    },
    rateLimits,
  };
}

/** Names of the variables the production topology (docker-compose) must set for every role. */
export const PRODUCTION_VARS = (Object.keys(CONFIG_VARS) as ConfigVar[]).filter((name) => (CONFIG_VARS[name][1] as VarDoc).production);

/** One row per variable for the configuration table (docs/configuration.md): name, default, description. */
export function configTable(): { name: ConfigVar; fallback: string; doc: string }[] {
  const defaults = envSchema.parse({});
  return (Object.keys(CONFIG_VARS) as ConfigVar[]).map((name) => {
    const value = (defaults as Record<string, unknown>)[name];
    const bucket = RATE_BUCKET_NAMES.find((b) => RATE_BUCKETS[b].env === name);
    const fallback = bucket
      ? RATE_BUCKETS[bucket].fallback
      : value === undefined
        ? ''
        : Array.isArray(value)
          ? value.join(',')
          : typeof value === 'object' && value !== null && 'windowSec' in value
            ? `${(value as RateRule).limit}:${(value as RateRule).windowSec}`
            : String(value === false ? '0' : value === true ? '1' : (value as string | number));
    return { name, fallback, doc: (CONFIG_VARS[name][1] as VarDoc).doc };
  });
}
