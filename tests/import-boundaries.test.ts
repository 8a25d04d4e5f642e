import { existsSync } from 'node:fs';
import { join, posix } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '#shared/paths.js';
import { isTest, projectSources } from '#tests/support/sources.js';

/**
 * Who may import whom, read from the sources (every `import … from`, `export … from`, side-effect
 * and dynamic import, type-only ones included). shared/ is the code every role builds on: it imports
 * no service code, not even in its tests (a test that needs the composed app is a platform test and
 * lives in tests/), and its live code imports nothing from tests/.
 */

/** Module paths (from the project root, `/`-separated) to the project files each imports. */
type ImportGraph = Map<string, string[]>;

/** The specifiers a source imports: static, re-exported, side-effect and dynamic. */
function specifiersIn(source: string): string[] {
  const patterns = [/^\s*(?:import|export)\b[^;'"`]*?\bfrom\s*['"]([^'"]+)['"]/gm, /^\s*import\s*['"]([^'"]+)['"]/gm, /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g];
  return patterns.flatMap((pattern) => [...source.matchAll(pattern)].map((match) => match[1]!));
}

/**
 * The project file a specifier names, or undefined for a package: relative (`./x.js` is `./x.ts` or
 * `./x.tsx` on disk) or through package.json's `imports` (`#shared/x.js` is `shared/x.ts`).
 */
function resolve(from: string, specifier: string, exists: (path: string) => boolean): string | undefined {
  const alias = /^#(shared|services|tests|bench|scripts)\//.exec(specifier);
  if (!specifier.startsWith('.') && !alias) return undefined;
  const target = alias ? specifier.slice(1) : posix.normalize(posix.join(posix.dirname(from), specifier));
  const candidates = [target, target.replace(/\.js$/, '.ts'), target.replace(/\.js$/, '.tsx'), `${target}.ts`, `${target}/index.ts`];
  return candidates.find(exists) ?? target;
}

/** The import graph of a set of sources (path to text), each edge resolved to a project path. */
function importGraph(sources: Map<string, string>, exists: (path: string) => boolean = (path) => sources.has(path)): ImportGraph {
  const graph: ImportGraph = new Map();
  for (const [path, text] of sources) {
    graph.set(
      path,
      specifiersIn(text).flatMap((specifier) => resolve(path, specifier, exists) ?? []),
    );
  }
  return graph;
}

/** Every module `start` reaches through its imports, itself excluded. */
function reachable(graph: ImportGraph, start: string): Set<string> {
  const seen = new Set<string>();
  const stack = [...(graph.get(start) ?? [])];
  while (stack.length > 0) {
    const path = stack.pop()!;
    if (seen.has(path)) continue;
    seen.add(path);
    stack.push(...(graph.get(path) ?? []));
  }
  seen.delete(start);
  return seen;
}

/**
 * The import cycles among the modules `within` selects: each strongly connected component of more
 * than one module (or a module importing itself), its paths sorted (Tarjan's algorithm).
 */
function importCycles(graph: ImportGraph, within: (path: string) => boolean): string[][] {
  const index = new Map<string, number>();
  const lowLink = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (path: string): void => {
    index.set(path, index.size);
    lowLink.set(path, index.get(path)!);
    stack.push(path);
    onStack.add(path);
    for (const target of (graph.get(path) ?? []).filter(within)) {
      if (!index.has(target)) {
        visit(target);
        lowLink.set(path, Math.min(lowLink.get(path)!, lowLink.get(target)!));
      } else if (onStack.has(target)) {
        lowLink.set(path, Math.min(lowLink.get(path)!, index.get(target)!));
      }
    }
    if (lowLink.get(path) !== index.get(path)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== path);
    if (component.length > 1 || (graph.get(path) ?? []).includes(path)) cycles.push(component.sort());
  };
  for (const path of [...graph.keys()].filter(within).sort()) if (!index.has(path)) visit(path);
  return cycles.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

/** Where shared/ breaks its boundary: a module of shared/ that reaches services/, or live code that imports tests/. */
function boundaryBreaches(graph: ImportGraph): string[] {
  const breaches: string[] = [];
  for (const path of graph.keys()) {
    if (!path.startsWith('shared/')) continue;
    for (const target of graph.get(path) ?? []) {
      if (target.startsWith('services/')) breaches.push(`${path} imports ${target}`);
      else if (target.startsWith('tests/') && !isTest(path)) breaches.push(`${path} (live code) imports ${target}`);
    }
    const viaTests = [...reachable(graph, path)].filter((target) => target.startsWith('services/'));
    if (viaTests.length > 0 && !(graph.get(path) ?? []).some((target) => target.startsWith('services/'))) {
      breaches.push(`${path} reaches ${viaTests.sort()[0]} through its imports`);
    }
  }
  return breaches.sort();
}

describe('shared/ imports no service code', () => {
  it('reads every kind of import, type-only and dynamic ones included', () => {
    const source = [
      "import type { Principal } from './auth.js';",
      "import {\n  a,\n  type B,\n} from '../b.js';",
      "export { c } from './c.js';",
      "export type * from './d.js';",
      "import './e.js';",
      "const { f } = await import('../f.js');",
      "import { z } from 'zod';",
      "// Text that names 'from' and import in a comment, with a string: './not-an-import.js'",
    ].join('\n');
    expect(specifiersIn(source).sort()).toEqual(['../b.js', '../f.js', './auth.js', './c.js', './d.js', './e.js', 'zod']);
  });

  it('finds a planted import of services/ from shared/, direct or through a test helper', () => {
    const planted = new Map([
      ['shared/http/route.ts', "import { buildApp } from '../../services/app.js';"],
      ['shared/jobs/jobs.int.test.ts', "import { startTestPlatform } from '../../tests/support/platform.js';"],
      ['shared/ids.ts', "import { waitFor } from '../tests/support/wait.js';"],
      ['shared/time.ts', "import { waitFor } from '#tests/support/wait.js';"],
      ['shared/paths.ts', "import { startVisitConsumer } from '#services/enricher/visit-consumer.js';"],
      ['services/enricher/visit-consumer.ts', ''],
      ['tests/support/platform.ts', "import { buildApp } from '../../services/app.js';"],
      ['tests/support/wait.ts', "import { setTimeout } from 'node:timers/promises';"],
      ['services/app.ts', "import { SCOPES } from '#shared/http/scopes.js';"],
      ['shared/http/scopes.ts', ''],
      ['shared/cache/cache.int.test.ts', "import { openDashboard } from '#tests/ui/support.js';"],
      ['tests/ui/support.ts', "import { buildApp } from '#services/app.js';"],
    ]);
    expect(boundaryBreaches(importGraph(planted))).toEqual([
      'shared/cache/cache.int.test.ts reaches services/app.ts through its imports',
      'shared/http/route.ts imports services/app.ts',
      'shared/ids.ts (live code) imports tests/support/wait.ts',
      'shared/jobs/jobs.int.test.ts reaches services/app.ts through its imports',
      'shared/paths.ts imports services/enricher/visit-consumer.ts',
      'shared/time.ts (live code) imports tests/support/wait.ts',
    ]);
  });

  it('no module of shared/, tests included, imports services/ directly or through a test helper', () => {
    const sources = projectSources(['shared', 'services', 'tests']);
    // A guard against a walk that finds nothing: these files exist and import what is checked.
    expect(sources.has('shared/http/route.ts')).toBe(true);
    expect(sources.has('tests/support/context.ts')).toBe(true);
    const graph = importGraph(sources, (path) => sources.has(path) || existsSync(join(PROJECT_ROOT, path)));
    expect(graph.get('shared/jobs/jobs.int.test.ts')).toContain('tests/support/context.ts');
    expect(boundaryBreaches(graph)).toEqual([]);
  });
});

describe('shared/ has no import cycle', () => {
  const inShared = (path: string): boolean => path.startsWith('shared/');

  it('finds a planted cycle, a type-only one and a longer one included, and leaves a chain alone', () => {
    const planted = new Map([
      ['shared/http/auth.ts', "import type { Scope } from './route.js';"],
      ['shared/http/route.ts', "import type { Principal } from './auth.js';\nimport { RESERVED } from '../reserved.js';"],
      ['shared/reserved.ts', "import type { RateBucket } from './config.js';"],
      ['shared/config.ts', "import { loadSecrets } from './secrets/load.js';"],
      ['shared/secrets/load.ts', "import type { Config } from '../config.js';\nimport { SECRET } from './key.js';"],
      ['shared/secrets/key.ts', "import { ids } from '../ids.js';"],
      ['shared/ids.ts', ''],
      ['shared/self.ts', "export { x } from './self.js';"],
      ['services/a.ts', "import { b } from './b.js';"],
      ['services/b.ts', "import { a } from './a.js';"],
    ]);
    expect(importCycles(importGraph(planted), inShared)).toEqual([
      ['shared/config.ts', 'shared/secrets/load.ts'],
      ['shared/http/auth.ts', 'shared/http/route.ts'],
      ['shared/self.ts'],
    ]);
    expect(importCycles(importGraph(planted), (path) => path.startsWith('services/'))).toEqual([['services/a.ts', 'services/b.ts']]);
  });

  it('no module of shared/ imports itself through any chain of imports, type-only ones included', () => {
    const sources = projectSources(['shared']);
    const graph = importGraph(sources, (path) => sources.has(path) || existsSync(join(PROJECT_ROOT, path)));
    expect(graph.get('shared/http/route.ts')).toContain('shared/http/auth.ts');
    expect(importCycles(graph, inShared)).toEqual([]);
  });
});

/**
 * A role's live code imports no other role's folder: editing the API must not change the edge
 * unseen. The composition modules of services/ (app.ts, platform.ts, repositories.ts) compose the
 * roles and may be imported; the edge serves the subdomains' public pages, so ingest may import
 * public-page/. Tests are free to reach across (a pipeline test drives the edge and the enricher).
 */
const ROLE_FOLDERS = ['api', 'ingest', 'enricher', 'worker', 'public-page'] as const;
const MAY_IMPORT: Record<string, readonly string[]> = { ingest: ['public-page'] };

function crossRoleImports(graph: ImportGraph): string[] {
  const roleOf = (path: string): string | undefined => ROLE_FOLDERS.find((role) => path.startsWith(`services/${role}/`));
  const breaches: string[] = [];
  for (const [path, targets] of graph) {
    const role = roleOf(path);
    if (!role || isTest(path)) continue;
    for (const target of targets) {
      const other = roleOf(target);
      if (other && other !== role && !(MAY_IMPORT[role] ?? []).includes(other)) breaches.push(`${path} imports ${target}`);
    }
  }
  return breaches.sort();
}

describe('a role imports no other role', () => {
  it('finds a planted cross-role import, relative or through #services/, and leaves the allowed ones alone', () => {
    const planted = new Map([
      ['services/ingest/link-cache.ts', "import { linksRepository } from '../api/links/links.repository.js';"],
      ['services/enricher/limits.ts', "import { SLUG } from '#services/api/links/links.service.js';"],
      ['services/ingest/app.ts', "import type { PublicPages } from '../public-page/public-page.js';\nimport type { Repositories } from '../repositories.js';"],
      ['services/api/links/links.test.ts', "import { startVisitConsumer } from '#services/enricher/visit-consumer.js';"],
      ['services/api/links/links.repository.ts', ''],
      ['services/api/links/links.service.ts', ''],
      ['services/public-page/public-page.ts', ''],
      ['services/repositories.ts', "import { sessionsRepository } from './api/auth/sessions.repository.js';"],
      ['services/enricher/visit-consumer.ts', ''],
      ['services/api/stats/stats.service.ts', "import type { PublicPages } from '../../public-page/public-page.js';"],
    ]);
    expect(crossRoleImports(importGraph(planted))).toEqual([
      'services/api/stats/stats.service.ts imports services/public-page/public-page.ts',
      'services/enricher/limits.ts imports services/api/links/links.service.ts',
      'services/ingest/link-cache.ts imports services/api/links/links.repository.ts',
    ]);
  });

  it('no live module of a role imports another role', () => {
    const sources = projectSources(['services']);
    const graph = importGraph(sources);
    expect(graph.get('services/ingest/app.ts')).toContain('services/public-page/public-page.ts');
    expect(crossRoleImports(graph)).toEqual([]);
  });
});
