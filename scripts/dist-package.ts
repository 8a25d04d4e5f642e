// Writes <outDir>/package.json for a tsc output folder (dist, dist-bench), so the compiled code finds
// its own modules through the same `#shared/…`, `#services/…`, `#tests/…`, `#bench/…` and `#scripts/…` specifiers
// as the sources. Node resolves a `#` specifier through the nearest package.json above the importing
// file: the project's maps each to a TypeScript source (for tsc, tsx, Vitest and Vite), this one
// maps each to the compiled JavaScript beside it (for `node dist/services/main.js`), with no flag.
//   tsx scripts/dist-package.ts dist
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from '#shared/paths.js';

/** The package.json of a compiled folder: ES modules, the project's `imports` pointed at the .js files. */
export function distPackage(project: { imports: Record<string, string> }): object {
  const imports = Object.fromEntries(
    Object.entries(project.imports).map(([specifier, target]) => {
      if (!/^\.\/[a-z-]+\/\*\.ts$/.test(target)) throw new Error(`package.json imports: ${specifier} → ${target} is not ./<folder>/*.ts`);
      return [specifier, target.replace(/\.ts$/, '.js')];
    }),
  );
  return { private: true, type: 'module', description: 'Written by scripts/dist-package.ts at build time.', imports };
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  const outDir = process.argv[2];
  if (!outDir) throw new Error('usage: tsx scripts/dist-package.ts <outDir>');
  const project = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { imports: Record<string, string> };
  writeFileSync(join(PROJECT_ROOT, outDir, 'package.json'), JSON.stringify(distPackage(project), null, 2) + '\n');
}
