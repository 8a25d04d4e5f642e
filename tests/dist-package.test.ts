import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '#shared/paths.js';
import { distPackage } from '#scripts/dist-package.js';

const project = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { imports: Record<string, string> };

describe('the package.json of a compiled folder (scripts/dist-package.ts)', () => {
  it('maps every `#` specifier of the project to the compiled JavaScript of the same folder', () => {
    const compiled = distPackage(project) as { type: string; imports: Record<string, string> };
    expect(compiled.type).toBe('module');
    expect(Object.keys(compiled.imports).sort()).toEqual(Object.keys(project.imports).sort());
    expect(compiled.imports['#shared/*.js']).toBe('./shared/*.js');
    expect(project.imports['#shared/*.js']).toBe('./shared/*.ts');
  });

  it('refuses a project mapping it cannot mirror', () => {
    expect(() => distPackage({ imports: { '#x/*': '../elsewhere/*.ts' } })).toThrow(/not \.\/<folder>\/\*\.ts/);
  });
});
