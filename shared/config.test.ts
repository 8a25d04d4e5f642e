import { describe, expect, it } from 'vitest';
import { CONFIG_VARS, ConfigError, PRODUCTION_VARS, RATE_BUCKETS, configTable, loadConfig } from './config.js';

/** The one line loadConfig throws for an environment. */
function configErrorOf(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('runs on embedded defaults with an empty environment', () => {
    const config = loadConfig({});
    expect(config.port).toBe(8080);
    expect(config.baseDomain).toBe('localhost');
    expect(config.roles).toEqual(['api', 'ingest', 'enricher', 'worker']);
    // The embedded engines' sizes come from the memory budget (shared/memory-budget.test.ts).
    expect(config.database).toEqual({ kind: 'pglite', dir: './data/pg', sharedBuffersMb: config.memory.pgliteSharedBuffersMb });
    expect(config.analytics).toEqual({ kind: 'chdb', dir: './data/chdb', budget: config.memory.chdb });
    expect(config.messageLog).toEqual({ kind: 'lmdb', dir: './data/log', commitDelayMs: 50, capacity: 1_000_000, minFreeBytes: 256 * 1_048_576 });
    expect(config.jobs).toEqual({ dir: './data/jobs', minFreeBytes: 256 * 1_048_576 });
    expect(config.redisUrl).toBeUndefined();
    // Production-like by default (issue 23): no exception detail, and a cookie that follows PUBLIC_URL.
    expect(config.env).toBe('production');
    expect(config.errorDetail).toBe(false);
    expect(config.secureCookies).toBe(false);
    expect(config.rateLimits.default).toEqual({ limit: 600, windowSec: 60 });
    expect(config.rateLimits.auth).toEqual({ limit: 20, windowSec: 900 });
    expect(config.rateLimits.swarm_read).toEqual({ limit: 3000, windowSec: 60 });
    expect(config.rateLimits.track).toEqual({ limit: 120, windowSec: 60 });
    expect(config.trustProxy).toEqual([]);
  });

  it('shows exception detail only when asked for, and makes the cookie Secure by the scheme of PUBLIC_URL', () => {
    expect(loadConfig({ NODE_ENV: 'development' }).errorDetail).toBe(true);
    expect(loadConfig({ DEBUG: '1' }).errorDetail).toBe(true);
    expect(loadConfig({ NODE_ENV: 'test' }).errorDetail).toBe(false);
    expect(loadConfig({ PUBLIC_URL: 'https://links.example.com' }).secureCookies).toBe(true);
    expect(loadConfig({ NODE_ENV: 'production', PUBLIC_URL: 'http://localhost:8080' }).secureCookies).toBe(false);
  });

  it('switches each dependency to its server when its URL is set', () => {
    const config = loadConfig({
      DATABASE_URL: 'postgres://u:p@db:5432/linktrack',
      CLICKHOUSE_URL: 'http://clickhouse:8123',
      KAFKA_BROKERS: 'k1:9092,k2:9092',
      REDIS_URL: 'redis://redis:6379',
      SERVICE_ROLES: 'ingest, enricher,ingest',
      DATA_DIR: '/var/lib/linktrack',
    });
    expect(config.database).toMatchObject({ kind: 'postgres', url: 'postgres://u:p@db:5432/linktrack' });
    expect(config.analytics).toEqual({ kind: 'clickhouse', url: 'http://clickhouse:8123' });
    expect(config.messageLog).toMatchObject({ kind: 'kafka', brokers: ['k1:9092', 'k2:9092'] });
    expect(config.redisUrl).toBe('redis://redis:6379');
    expect(config.roles).toEqual(['ingest', 'enricher']);
  });

  it('spaces partial inserts by ENRICHER_INSERT_INTERVAL_MS, by default twice ENRICHER_BATCH_WAIT_MS', () => {
    expect(loadConfig({}).enricherBatch).toEqual({ size: 10_000, waitMs: 500, intervalMs: 1_000 });
    expect(loadConfig({ ENRICHER_BATCH_WAIT_MS: '20' }).enricherBatch.intervalMs).toBe(40);
    expect(loadConfig({ ENRICHER_BATCH_WAIT_MS: '20', ENRICHER_INSERT_INTERVAL_MS: '0' }).enricherBatch.intervalMs).toBe(0);
    expect(loadConfig({ ENRICHER_INSERT_INTERVAL_MS: '' }).enricherBatch.intervalMs).toBe(1_000);
    expect(configErrorOf({ ENRICHER_INSERT_INTERVAL_MS: '60001' })).toMatch(/ENRICHER_INSERT_INTERVAL_MS/);
  });

  it('treats empty values as unset', () => {
    expect(loadConfig({ PORT: '', DATABASE_URL: '  ' }).port).toBe(8080);
    expect(loadConfig({ DATABASE_URL: '' }).database.kind).toBe('pglite');
  });

  it.each([
    [{ PORT: 'abc' }, /^invalid configuration: PORT must be an integer from 1 to 65535 \(got "abc"\)$/],
    [{ PORT: '70000' }, /PORT must be an integer from 1 to 65535/],
    [{ SERVICE_ROLES: 'api,web' }, /SERVICE_ROLES must list roles among api, ingest, enricher, worker/],
    [{ SERVICE_ROLES: ' , ' }, /SERVICE_ROLES must name at least one role/],
    [{ DATABASE_URL: 'mysql://x' }, /^invalid configuration: DATABASE_URL must be a URL with scheme postgres or postgresql \(got a value\)$/],
    [{ REDIS_URL: 'http://x' }, /REDIS_URL must be a URL with scheme redis or rediss/],
    [{ KAFKA_BROKERS: 'broker' }, /KAFKA_BROKERS must be a comma-separated list of host:port/],
    [{ RATE_LIMIT_API: '600' }, /RATE_LIMIT_API must be <limit>:<window-seconds>/],
    [{ RATE_LIMIT_REDIRECT: '0:60' }, /RATE_LIMIT_REDIRECT must be <limit>:<window-seconds>, both at least 1/],
    [{ BASE_DOMAIN: 'Bad_Domain' }, /BASE_DOMAIN must be a lower-case host name/],
    [{ NODE_ENV: 'staging' }, /NODE_ENV must be development, production or test/],
    [{ DEBUG: 'maybe' }, /DEBUG must be one of 1, 0, true, false/],
    [{ ADMIN_EMAIL: 'not-an-email' }, /ADMIN_EMAIL must be an e-mail address/],
    [{ ADMIN_EMAIL: 'a@b.example', ADMIN_PASSWORD: 'short' }, /^invalid configuration: ADMIN_PASSWORD must be at least 12 characters \(got a value\)$/],
    [{ ADMIN_PASSWORD: 'long enough password' }, /ADMIN_EMAIL must be set when ADMIN_PASSWORD is set/],
    [{ TRUST_PROXY: '10.0.0.0/8,not a cidr' }, /TRUST_PROXY must be comma-separated IP addresses or CIDR ranges/],
    [{ BODY_LIMIT: '10' }, /BODY_LIMIT must be at least 1024 bytes/],
    [{ WORKER_NICE: '20' }, /^invalid configuration: WORKER_NICE must be from 0 to 19 \(got "20"\)$/],
    [{ WORKER_NICE: '-5' }, /WORKER_NICE must be from 0 to 19/],
  ])('%o stops start-up with one line naming the variable and the rule', (env, expected) => {
    const message = configErrorOf(env);
    expect(message).toMatch(expected);
    expect(message).not.toContain('\n');
  });

  it('never echoes secrets in the error', () => {
    expect(configErrorOf({ DATABASE_URL: 'mysql://user:hunter2@db/x' })).not.toContain('hunter2');
    expect(configErrorOf({ ADMIN_EMAIL: 'a@b.example', ADMIN_PASSWORD: 'hunter2' })).not.toContain('hunter2');
  });

  it('keeps secrets at rest in DATA_DIR/secrets.key on the embedded stores, and prunes after 30 and 365 days by default', () => {
    const config = loadConfig({ DATA_DIR: '/var/lib/linktrack' });
    expect(config.secrets).toEqual({ key: undefined, previous: [], keyFile: '/var/lib/linktrack/secrets.key' });
    expect(config.retention).toEqual({ webhookDeliveriesDays: 30, auditDays: 365, visitsMaxDays: 0 });
    expect(loadConfig({ WEBHOOK_DELIVERY_RETENTION_DAYS: '0', AUDIT_RETENTION_DAYS: '7', VISITS_RETENTION_DAYS_MAX: '400' }).retention).toEqual({
      webhookDeliveriesDays: 0,
      auditDays: 7,
      visitsMaxDays: 400,
    });
  });

  it('reads SECRETS_KEY as base64 or hex of 32 bytes and SECRETS_KEY_PREVIOUS as a list', () => {
    const key = Buffer.alloc(32, 1);
    const old = [Buffer.alloc(32, 2), Buffer.alloc(32, 3)];
    const config = loadConfig({
      SECRETS_KEY: key.toString('base64'),
      SECRETS_KEY_PREVIOUS: `${old[0]!.toString('hex')}, ${old[1]!.toString('base64url')}`,
      DATABASE_URL: 'postgres://u:p@db:5432/linktrack',
    });
    expect(config.secrets).toEqual({ key, previous: old, keyFile: undefined });
  });

  it.each([
    [
      { SECRETS_KEY: 'hunter2hunter2' },
      /^invalid configuration: SECRETS_KEY must be 32 random bytes as base64 or 64 hex digits \(openssl rand -base64 32\) \(got a value\)$/,
    ],
    [{ SECRETS_KEY: Buffer.alloc(16).toString('base64') }, /SECRETS_KEY must be 32 random bytes/],
    [
      { SECRETS_KEY_PREVIOUS: `${Buffer.alloc(32).toString('base64')},hunter2` },
      /^invalid configuration: SECRETS_KEY_PREVIOUS must be a comma-separated list of keys; each must be 32 random bytes/,
    ],
    [
      { DATABASE_URL: 'postgres://u:p@db/x' },
      /^invalid configuration: SECRETS_KEY must be set when DATABASE_URL is set and this process runs the api or worker role/,
    ],
    [{ DATABASE_URL: 'postgres://u:p@db/x', SERVICE_ROLES: 'worker' }, /SECRETS_KEY must be set when DATABASE_URL is set/],
    [
      { WEBHOOK_DELIVERY_RETENTION_DAYS: '-1' },
      /^invalid configuration: WEBHOOK_DELIVERY_RETENTION_DAYS must be a whole number of days from 0 \(keep forever\) to 3650 \(got "-1"\)$/,
    ],
    [{ AUDIT_RETENTION_DAYS: '1.5' }, /AUDIT_RETENTION_DAYS must be a whole number of days/],
  ])('%o: secrets and retention settings stop start-up with one line, never echoing a key', (env, expected) => {
    const message = configErrorOf(env);
    expect(message).toMatch(expected);
    expect(message).not.toContain('hunter2');
    expect(message).not.toContain('\n');
  });

  it('lets a process running neither the api nor the worker role share a Postgres without SECRETS_KEY (it never reads a secret)', () => {
    expect(loadConfig({ DATABASE_URL: 'postgres://u:p@db/x', SERVICE_ROLES: 'ingest,enricher' }).secrets).toEqual({
      key: undefined,
      previous: [],
      keyFile: undefined,
    });
  });

  it('reads all eight rate buckets from their settings', () => {
    const env = Object.fromEntries(Object.values(RATE_BUCKETS).map(({ env }, index) => [env, `${index + 1}:${index + 10}`]));
    const config = loadConfig(env);
    Object.keys(RATE_BUCKETS).forEach((bucket, index) => {
      expect(config.rateLimits[bucket as keyof typeof RATE_BUCKETS]).toEqual({ limit: index + 1, windowSec: index + 10 });
    });
  });
});

describe('configuration documentation', () => {
  it('documents every variable, with defaults for the rate buckets', () => {
    const table = configTable();
    expect(table.map((row) => row.name)).toEqual(Object.keys(CONFIG_VARS));
    expect(table.find((row) => row.name === 'RATE_LIMIT_AUTH')?.fallback).toBe('20:900');
    expect(table.find((row) => row.name === 'PORT')?.fallback).toBe('8080');
    for (const row of table) expect(row.doc.length).toBeGreaterThan(5);
  });

  it('marks the service URLs and roles as what the production topology must set', () => {
    expect(PRODUCTION_VARS).toEqual(expect.arrayContaining(['DATABASE_URL', 'CLICKHOUSE_URL', 'KAFKA_BROKERS', 'REDIS_URL', 'SERVICE_ROLES', 'BASE_DOMAIN']));
  });
});
