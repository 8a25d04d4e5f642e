import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { PROJECT_ROOT } from '#shared/paths.js';

/**
 * The project's sources read as text, for the tests that hold the code base to a rule by reading it
 * (tests/import-boundaries, sql-in-repositories and repositories-composed).
 */

/** The TypeScript sources under the given folders (from the project root), by project path (`/`-separated). */
export function projectSources(folders: readonly string[]): Map<string, string> {
  const sources = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules') walk(full);
      } else if (/\.tsx?$/.test(entry.name)) sources.set(relative(PROJECT_ROOT, full).split(sep).join('/'), readFileSync(full, 'utf8'));
    }
  };
  for (const folder of folders) walk(join(PROJECT_ROOT, folder));
  return sources;
}

export const isTest = (path: string): boolean => /\.test\.tsx?$/.test(path);

/** A repository module: `x.repository.ts`, or `repository.ts`. */
export const isRepository = (path: string): boolean => /(^|\/)([a-z0-9-]+\.)?repository\.ts$/.test(path);

/** What a rule looks for in a line, and what to call it in a finding. */
export interface LinePattern {
  what: string;
  pattern: RegExp;
}

/** The lines of a source that match a pattern (the first that matches names the finding), numbered from 1. */
export function matchingLines(source: string, patterns: readonly LinePattern[]): { line: number; what: string; text: string }[] {
  return source.split('\n').flatMap((text, index) => {
    const found = patterns.find(({ pattern }) => pattern.test(text));
    return found ? [{ line: index + 1, what: found.what, text: text.trim() }] : [];
  });
}

/** Every matching line of the sources a rule covers, as `path:line (what) text`: the offenders a test expects to be none. */
export function offendingLines(sources: Map<string, string>, patterns: readonly LinePattern[], exempt: (path: string) => boolean): string[] {
  return [...sources]
    .filter(([path]) => !exempt(path))
    .flatMap(([path, text]) => matchingLines(text, patterns).map((found) => `${path}:${found.line} (${found.what}) ${found.text}`));
}
