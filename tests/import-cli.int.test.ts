// `npm run import` (scripts/import.ts) against a real platform process (the one-process platform from
// source, on embedded stores): a client of the import API, as an integration is.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '#shared/paths.js';
import { SERVICES_MODE } from './support/context.js';
import { bitlyCsv, shlinkCsv, sourceLinks } from './support/import-fixtures.js';
import { shlinkVisits, startShlinkStandIn } from './support/shlink-stand-in.js';
import { yourlsClicks, yourlsMysqldump } from './support/yourls-dump.js';
import { startYourlsStandIn } from './support/yourls-stand-in.js';
import { client, EMBEDDED_PLATFORM_ENV, freePort, killAll, seed, startProcess, waitHealthy, type Seeded } from './support/platform-process.js';

let dir: string;
let port: number;
let seeded: Seeded;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'linktrack-import-cli-'));
  port = await freePort();
  // WEBHOOK_ALLOWLIST admits the loopback stand-ins of the API sources, as an operator admits a self-hosted source.
  const platform = startProcess({
    ...EMBEDDED_PLATFORM_ENV,
    DATA_DIR: join(dir, 'data'),
    PORT: String(port),
    RATE_LIMIT_API: '100000:60',
    WEBHOOK_ALLOWLIST: '127.0.0.1',
  });
  await waitHealthy(platform);
  seeded = await seed(port);
}, 120_000);

afterAll(() => {
  killAll();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI with `args`; the platform's URL and the seeded token in the environment unless `env` says otherwise. */
function cli(
  args: string[],
  env: Record<string, string> = {},
  command = [process.execPath, '--import', 'tsx', join(PROJECT_ROOT, 'scripts/import.ts')],
): Promise<Run> {
  const [executable, ...rest] = command;
  return new Promise((resolve) => {
    execFile(
      executable!,
      [...rest, ...args],
      {
        cwd: PROJECT_ROOT,
        env: { ...process.env, LINKTRACK_URL: `http://127.0.0.1:${port}`, LINKTRACK_TOKEN: seeded.token, LINKTRACK_IMPORT_POLL_MS: '100', ...env },
        timeout: 300_000,
      },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }),
    );
  });
}

const fileOf = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

describe.skipIf(SERVICES_MODE)('npm run import, a client of the import API', () => {
  it('dry-runs, imports with progress and a report of every row not imported, then imports nothing the second time', async () => {
    const call = client(port);
    const made = await call(
      'POST',
      '/api/v1/links',
      { subdomain: seeded.subdomain, slug: 'cli3', target_url: 'https://mine.example/' },
      { authorization: `Bearer ${seeded.token}` },
    );
    expect(made.status).toBe(201);
    const path = fileOf('short_urls.csv', shlinkCsv(sourceLinks(150, 'cli')));

    const dry = await cli(['--from', 'shlink', '--file', path, '--subdomain', seeded.subdomain, '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(/\(dry run: nothing written\) completed: 150 rows, would_create 149, conflict 1\nline 5: conflict cli3 \(slug_taken\)\n$/);

    // Through npm, as the docs say to run it.
    const run = await cli(['--from', 'shlink', '--file', path, '--subdomain', seeded.subdomain], {}, ['npm', 'run', '--silent', 'import', '--']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/completed: 150 rows, created 149, conflict 1\nline 5: conflict cli3 \(slug_taken\)\n$/);
    expect(run.stderr).toMatch(/import imp_[A-Za-z0-9_-]{16}: \d+ bytes of shlink into \S+, queued\n/);
    expect(run.stderr).toMatch(/: completed 150\/150 rows \(created 149, conflict 1\)\n/);

    const again = await cli(['--from', 'shlink', '--file', path, '--subdomain', seeded.subdomain]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/completed: 150 rows, exists 149, conflict 1\n/);
    const links = await call('GET', `/api/v1/links?subdomain=${seeded.subdomain}&limit=1`, undefined, { authorization: `Bearer ${seeded.token}` });
    // The seed's link, the one made above and the 149 imported.
    expect(links.json.meta.total).toBe(151);
  }, 300_000);

  it('exits 1 naming the failure: a file that is not the source’s export, another token’s refusal, a platform that does not answer', async () => {
    const bitly = fileOf('bitly.csv', bitlyCsv(sourceLinks(3, 'bx')));
    const notShlink = await cli(['--from', 'shlink', '--file', bitly, '--subdomain', seeded.subdomain]);
    expect(notShlink.code).toBe(1);
    expect(notShlink.stderr).toContain('import failed: validation_error {"file":"not a shlink export: no slug column"}');

    const badToken = await cli(['--from', 'bitly', '--file', bitly, '--subdomain', seeded.subdomain], { LINKTRACK_TOKEN: 'svc_u_not_a_token' });
    expect(badToken.code).toBe(1);
    expect(badToken.stderr).toMatch(/import failed: HTTP 401 invalid_token/);

    const unknown = await cli(['--from', 'bitly', '--file', bitly, '--subdomain', 'nosuchsubdomain']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/import failed: HTTP 404 not_found/);

    const format = await cli(['--from', 'tinyurl', '--file', bitly, '--subdomain', seeded.subdomain]);
    expect(format.code).toBe(1);
    expect(format.stderr).toMatch(/import failed: HTTP 422 validation_error/);

    const down = await cli(['--from', 'bitly', '--file', bitly, '--subdomain', seeded.subdomain], { LINKTRACK_URL: `http://127.0.0.1:${await freePort()}` });
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/import failed: POST http:\/\/127\.0\.0\.1:\d+\/api\/v1\/imports: .*ECONNREFUSED/);

    const missing = await cli(['--from', 'bitly', '--file', join(dir, 'nothing-here.csv'), '--subdomain', seeded.subdomain]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('import failed: cannot read');
  }, 300_000);

  it('exits 2 with the usage on a missing or unknown flag, and without a URL or token', async () => {
    const noFile = await cli(['--from', 'shlink', '--subdomain', seeded.subdomain]);
    expect(noFile.code).toBe(2);
    expect(noFile.stderr).toContain('--file is required\nusage: npm run import -- --from <bitly|dub|shlink|yourls>');
    const unknownFlag = await cli(['--from', 'shlink', '--file', 'x.csv', '--subdomain', 's', '--force']);
    expect(unknownFlag.code).toBe(2);
    expect(unknownFlag.stderr).toContain("Unknown option '--force'");
    const noToken = await cli(['--from', 'shlink', '--file', 'x.csv', '--subdomain', 's'], { LINKTRACK_TOKEN: '' });
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toContain('--token or LINKTRACK_TOKEN is required');
  }, 60_000);
});

describe.skipIf(SERVICES_MODE)('npm run import from a source’s API or YOURLS’s database export (local stand-ins)', () => {
  it('imports from the Shlink stand-in with its visits, then nothing new; a refused key exits 1 naming api_key', async () => {
    const links = sourceLinks(12, 'cs');
    const shlink = await startShlinkStandIn(links, new Map([[links[0]!.slug, shlinkVisits(links[0]!.slug, 25, Date.UTC(2024, 5, 30, 12))]]));
    try {
      const subdomain = (await seed(port, {})).subdomain;
      const args = ['--from', 'shlink-api', '--source-url', shlink.url, '--subdomain', subdomain];
      const run = await cli([...args, '--api-key', shlink.apiKey]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toMatch(/of shlink-api into .* completed: 12 rows, created 12; visits: added 25, existing 0\n$/);
      expect(run.stderr).toContain(`shlink-api at ${shlink.url}`);
      expect(run.stderr).not.toContain(shlink.apiKey);

      const again = await cli(args, { IMPORT_API_KEY: shlink.apiKey });
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toMatch(/completed: 12 rows, exists 12; visits: added 0, existing 25\n$/);

      const refused = await cli([...args, '--api-key', 'wrong']);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/import failed: validation_error \{"api_key":"Shlink refused the API key \(401/);

      const missing = await cli(['--from', 'shlink-api', '--subdomain', subdomain, '--api-key', 'k']);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toContain('--source-url is required with --from shlink-api');
    } finally {
      await shlink.close();
    }
  }, 300_000);

  it('imports from the YOURLS API stand-in with a username and IMPORT_PASSWORD, and a YOURLS database export with --file', async () => {
    const yourls = await startYourlsStandIn(sourceLinks(4, 'cy'));
    try {
      const { subdomain } = await seed(port, {});
      const api = await cli(['--from', 'yourls-api', '--source-url', yourls.url, '--username', yourls.username, '--subdomain', subdomain], {
        IMPORT_PASSWORD: yourls.password,
      });
      expect(api.code, api.stderr).toBe(0);
      expect(api.stdout).toMatch(/completed: 4 rows, created 4; visits: added 0, existing 0\n$/);
    } finally {
      await yourls.close();
    }
    const { subdomain } = await seed(port, {});
    const links = sourceLinks(6, 'cd');
    const dump = fileOf('yourls.sql', yourlsMysqldump(links, yourlsClicks(links[1]!.slug, 7, 1, Date.UTC(2024, 5, 30, 12))));
    const run = await cli(['--from', 'yourls', '--file', dump, '--subdomain', subdomain]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/completed: 6 rows, created 6; visits: added 7, existing 0\n$/);
    const noHistory = await cli(['--from', 'yourls', '--file', dump, '--subdomain', (await seed(port, {})).subdomain, '--no-history']);
    expect(noHistory.stdout).toMatch(/completed: 6 rows, created 6; visits: added 0, existing 0\n$/);
  }, 300_000);
});
