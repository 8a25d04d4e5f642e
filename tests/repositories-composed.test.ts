import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '#shared/paths.js';
import { isRepository, isTest, matchingLines, offendingLines, projectSources, type LinePattern } from '#tests/support/sources.js';

/**
 * Repositories are built once per process, in services/repositories.ts, and handed down: a service,
 * route module or role function takes the ones it uses (`Pick<Repositories, …>`), so its signature
 * says what it reads and writes. A call of a repository factory (`linksRepository(…)`) or a reach
 * into the Postgres handle (`context.db.db`) anywhere else under services/ or shared/ fails this
 * test, which names the file, the line and what it found. Tests (not scanned) build what they check
 * as they like; scripts/ and bench/ are their own composition roots.
 */

/** What building a collaborator inside looks like. */
const PATTERNS: readonly LinePattern[] = [
  { what: 'repository factory call', pattern: /\b[a-z]\w*Repository\s*\(/ },
  { what: 'Postgres handle reached through the context', pattern: /\bdb\.db\b/ },
];

/** The breaches a source text holds: each line that matches a pattern, with what it matched. */
const breachesIn = (source: string) => matchingLines(source, PATTERNS);

/** Folders of the code the roles run. */
const SCANNED = ['services', 'shared'];

/** The composition root that builds every repository from the clients. Nothing else: the roles' roots call it. */
const ALLOWED: Record<string, string> = {
  'services/repositories.ts': 'builds each repository once from the Postgres and ClickHouse clients',
};

/** What building a whole set looks like: only a composition root does it. */
const BUILDS_SET: readonly LinePattern[] = [{ what: 'repositories built', pattern: /\b(?:create|postgres)Repositories\s*\(|\bcomposition\s*\(/ }];

/** Where a set of repositories is built, each with its reason. A role's start function builds one only when started alone. */
const COMPOSITION_ROOTS: Record<string, string> = {
  'services/repositories.ts':
    'defines createRepositories, postgresRepositories (a process without the analytics store) and composition (pairs a context with its set)',
  'services/platform.ts': "builds the process's one set and hands it to each role",
  'services/app.ts': 'builds a set when the HTTP app is built alone (tests, benches)',
  'services/enricher/visit-consumer.ts': 'builds a set when the visit consumer is started alone (tests, benches)',
  'services/worker/worker.ts': 'builds a set when the worker is started alone (tests, benches)',
};

/** Whether a file is outside the rule: tests, the repositories themselves (where each factory is defined) and the allowed files. */
function exempt(path: string): boolean {
  return isTest(path) || isRepository(path) || path in ALLOWED;
}

describe('repositories are composed once and handed down', () => {
  it('finds a planted factory call and a planted reach into the Postgres handle', () => {
    const planted = [
      'const links = linksRepository(context.db.db);',
      'const salts = visitorSaltsRepository(db);',
      'const visits = visitsRepository(analytics);',
      'const subscriptions = webhookCache({ webhooks: webhooksRepository(deps.database), cache });',
      'const key = await consentKey(context.db.db, config.tracker.secret);',
      'const rows = await db.db.selectFrom("links").selectAll().execute();',
    ];
    for (const line of planted) expect(breachesIn(line), line).toHaveLength(1);
    expect(breachesIn(planted.join('\n')).map((found) => found.line)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('leaves alone what only names a repository', () => {
    const harmless = [
      "import { linksRepository, type LinkRow } from '#shared/links/links.repository.js';",
      'export type UsersRepository = ReturnType<typeof usersRepository>;',
      "export async function limitWatcher(context: { repositories: Pick<Repositories, 'links' | 'visits'> }) {",
      'const repositories = createRepositories(context);',
      'const { links } = context.repositories;',
      'const applied = await migrateDatabase(context.db);',
      '// The repository (the webhooks one) is handed in.',
    ];
    for (const line of harmless) expect(breachesIn(line), line).toEqual([]);
  });

  it('no service, route module, role function or shared module outside the composition root builds a repository', () => {
    const sources = projectSources(SCANNED);
    // A guard against a walk that finds nothing: these are scanned, and the allowed file is there.
    expect(sources.has('services/api/links/links.service.ts')).toBe(true);
    expect(sources.has('shared/tracker/consent-token.ts')).toBe(true);
    expect(offendingLines(sources, PATTERNS, exempt)).toEqual([]);
  });

  it('the composition root still builds the repositories (an entry without a reason left is removed)', () => {
    for (const path of Object.keys(ALLOWED)) expect(breachesIn(readFileSync(join(PROJECT_ROOT, path), 'utf8')), path).not.toEqual([]);
  });

  it('finds a planted build of a whole set of repositories', () => {
    expect(matchingLines('const repositories = createRepositories(context);', BUILDS_SET)).toHaveLength(1);
    expect(matchingLines("import { createRepositories, type Repositories } from '#services/repositories.js';", BUILDS_SET)).toEqual([]);
  });

  it('only the composition roots build a whole set of repositories, and each still does', () => {
    const sources = projectSources(SCANNED);
    expect(offendingLines(sources, BUILDS_SET, (path) => isTest(path) || path in COMPOSITION_ROOTS)).toEqual([]);
    for (const path of Object.keys(COMPOSITION_ROOTS)) expect(matchingLines(sources.get(path) ?? '', BUILDS_SET), path).not.toEqual([]);
  });
});
