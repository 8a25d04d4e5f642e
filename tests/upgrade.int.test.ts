// Safe upgrades (issue 38): a DATA_DIR written by an earlier build — the build just before the older
// of the two stores' newest migrations was added (see earlierBuild), so it lacks the newest ones — is opened by this
// build, which migrates it forward; every record and report the earlier build wrote is intact. The
// earlier build's source comes from this clone's history (`git archive`), run on this clone's
// node_modules: CI clones with history.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { CLICKHOUSE_MIGRATIONS, POSTGRES_MIGRATIONS, PROJECT_ROOT } from '#shared/paths.js';
import { SERVICES_MODE } from './support/context.js';
import {
  ADMIN,
  EMBEDDED_PLATFORM_ENV,
  client,
  freePort,
  killAll,
  load,
  seed,
  settledCounts,
  startProcess,
  startReceiver,
  waitHealthy,
} from './support/platform-process.js';

const dirs: string[] = [];

/** What a stored visit reads as in a field a newer migration added (the column's default). */
const NEW_VISIT_FIELD_DEFAULTS: Record<string, unknown> = {
  // ClickHouse 0008: '' for a visit this platform answered, the source's name for an imported one.
  imported_from: '',
};

/** What a stored link reads as in a field a newer migration added (the column's default). */
const NEW_LINK_FIELD_DEFAULTS: Record<string, unknown> = {
  // Postgres 0018 (issue 40): no rules, no variants, the query not forwarded.
  rules: [],
  variants: null,
  forward_query: false,
  // Postgres 0020 (issue 40): no fallback, no password.
  fallback_url: null,
  has_password: false,
};

/** Checks and drops the fields of `records` the earlier build's `known` did not have: each must hold its default. */
function dropNewFields(records: Record<string, unknown>[], known: Set<string>, defaults: Record<string, unknown>, what: string) {
  for (const record of records) {
    for (const [field, value] of Object.entries(record)) {
      if (known.has(field)) continue;
      expect(field in defaults, `${field}: a ${what} field new since the earlier build, without a default here`).toBe(true);
      expect(value, field).toEqual(defaults[field]);
      delete record[field];
    }
  }
}

afterEach(() => killAll());
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const git = (...args: string[]) => execFileSync('git', args, { cwd: PROJECT_ROOT, encoding: 'utf8' }).trim();

/** The source of an earlier build that lacks the newest migrations (of both stores when it can), in a temp folder that uses this clone's node_modules. */
function earlierBuild(): { root: string; commit: string } {
  // The commit that added each store's newest migration: the build before the older of the two lacks
  // the newest of both. But a migration edited before it landed (in the commits of one stop) makes
  // the builds before that edit unfit: their store would hold the first text, which this build
  // refuses by checksum. Then the build before the newer of the two is taken, which lacks one store's newest.
  const depth = (commit: string) => Number(git('rev-list', '--count', commit));
  const added = ['clickhouse/migrations', 'postgres/migrations'].map((dir) => git('log', '-1', '--diff-filter=A', '--format=%H', '--', dir));
  if (added.some((commit) => !commit)) throw new Error('the upgrade test needs the clone with its history (git log found no migration being added)');
  const [older, newer] = added.sort((a, b) => depth(a) - depth(b)) as [string, string];
  const edited = git('log', '-1', '--diff-filter=M', '--format=%H', '--', 'clickhouse/migrations', 'postgres/migrations');
  const commit = git('rev-parse', `${edited && depth(edited) >= depth(older) ? newer : older}^`);
  const root = mkdtempSync(join(tmpdir(), 'linktrack-earlier-build-'));
  dirs.push(root);
  execFileSync('sh', ['-c', `git archive ${commit} | tar -x -C "${root}"`], { cwd: PROJECT_ROOT });
  symlinkSync(join(PROJECT_ROOT, 'node_modules'), join(root, 'node_modules'));
  return { root, commit };
}

const newest = (dir: string) =>
  readdirSync(dir)
    .filter((file) => /^\d{4}_[a-z0-9_]+\.sql$/.test(file))
    .sort()
    .at(-1)!
    .slice(0, 4);

/** What an owner sees of everything they made: links, webhooks, the subdomain's report and visit list. */
async function records(port: number, token: string, subdomain: string) {
  const call = client(port);
  const auth = { authorization: `Bearer ${token}` };
  const links = await call('GET', `/api/v1/links?subdomain=${subdomain}`, undefined, auth);
  const webhooks = await call('GET', '/api/v1/webhooks', undefined, auth);
  const report = await call('GET', `/api/v1/stats/subdomain/${subdomain}?since=2020-01-01T00:00:00Z`, undefined, auth);
  const visits = await call('GET', `/api/v1/visits?subdomain=${subdomain}&limit=100`, undefined, auth);
  for (const answer of [links, webhooks, report, visits]) expect(answer.status, JSON.stringify(answer.json)).toBe(200);
  // Short URLs carry the process's port, which differs between the two processes.
  const portless = (value: unknown) => JSON.parse(JSON.stringify(value).replaceAll(`:${port}/`, ':PORT/'));
  return {
    links: portless(links.json.data),
    webhooks: webhooks.json.data,
    totals: report.json.data.totals,
    visits: (visits.json.data.visits as { visit_id: string }[]).sort((a, b) => a.visit_id.localeCompare(b.visit_id)),
    visit_total: visits.json.meta.total,
  };
}

describe.skipIf(SERVICES_MODE)('a DATA_DIR written by an earlier build, opened by this one', () => {
  it('is migrated forward with every link, token (by hash), webhook, visit and report intact', async () => {
    const { root } = earlierBuild();
    // It lacks the newest migrations of one store at least, and has none this build lacks.
    const [earlierCh, earlierPg] = [readdirSync(join(root, 'clickhouse', 'migrations')), readdirSync(join(root, 'postgres', 'migrations'))];
    const [nowCh, nowPg] = [readdirSync(CLICKHOUSE_MIGRATIONS), readdirSync(POSTGRES_MIGRATIONS)];
    expect(earlierCh.length + earlierPg.length).toBeLessThan(nowCh.length + nowPg.length);
    expect([...earlierCh.filter((file) => !nowCh.includes(file)), ...earlierPg.filter((file) => !nowPg.includes(file))]).toEqual([]);
    const dataDir = mkdtempSync(join(tmpdir(), 'linktrack-upgrade-'));
    dirs.push(dataDir);
    const receiver = await startReceiver();
    try {
      const env = { ...EMBEDDED_PLATFORM_ENV, DATA_DIR: dataDir };
      const oldPort = await freePort();
      const old = startProcess({ ...env, PORT: String(oldPort) }, ['--import', 'tsx', join(root, 'services/main.ts')]);
      await waitHealthy(old, { timeoutMs: 90_000 });
      const seeded = await seed(oldPort, { webhookUrl: receiver.url });
      const traffic = load(oldPort, seeded.host, `/${seeded.slug}`, { connections: 4 });
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      await traffic.stop();
      const answered = traffic.answered.length;
      expect(answered).toBeGreaterThan(0);
      await settledCounts(oldPort, seeded.token, seeded.linkId, answered);
      const before = await records(oldPort, seeded.token, seeded.subdomain);
      expect(before.visit_total).toBe(answered);
      old.child.kill('SIGTERM');
      await old.exited;

      const port = await freePort();
      const current = startProcess({ ...env, PORT: String(port), LOG_LEVEL: 'info' });
      await waitHealthy(current, { timeoutMs: 90_000 });
      expect(current.output()).toMatch(/migrations applied/);
      const status = await client(port)('GET', '/api/v1/status');
      expect(status.json.data.schema).toEqual({
        database: { applied: newest(POSTGRES_MIGRATIONS), expected: newest(POSTGRES_MIGRATIONS), up_to_date: true },
        analytics: { applied: newest(CLICKHOUSE_MIGRATIONS), expected: newest(CLICKHOUSE_MIGRATIONS), up_to_date: true },
      });
      // The token minted by the earlier build still authenticates (its hash was kept), and every record reads the same;
      // a visit's field the earlier build did not have holds its default (a column a migration added).
      const upgraded = await records(port, seeded.token, seeded.subdomain);
      dropNewFields(upgraded.visits, new Set(Object.keys(before.visits[0] ?? {})), NEW_VISIT_FIELD_DEFAULTS, 'visit');
      dropNewFields(upgraded.links.links as Record<string, unknown>[], new Set(Object.keys(before.links.links[0] ?? {})), NEW_LINK_FIELD_DEFAULTS, 'link');
      expect(upgraded).toEqual(before);
      expect((await client(port)('POST', '/auth/login', ADMIN)).status).toBe(200);
      // The link still redirects, and the new visit is counted on top of the old ones.
      const after = load(port, seeded.host, `/${seeded.slug}`, { connections: 1 });
      await new Promise((resolve) => setTimeout(resolve, 300));
      await after.stop();
      expect(after.answered.length).toBeGreaterThan(0);
      await settledCounts(port, seeded.token, seeded.linkId, answered + after.answered.length);
    } finally {
      await receiver.close();
    }
  }, 240_000);
});
