import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../shared/paths.js';
import { END, START, renderConfigTable } from '../scripts/config-table.js';

const readme = readFileSync(join(PROJECT_ROOT, 'README.md'), 'utf8');

describe('README', () => {
  it('holds the configuration table generated from the config schema (npm run docs:config)', () => {
    const start = readme.indexOf(START);
    const end = readme.indexOf(END);
    expect(start).toBeGreaterThan(0);
    expect(readme.slice(start + START.length, end).trim()).toBe(renderConfigTable());
  });

  it('shows the two-command quickstart', () => {
    expect(readme).toContain('make run');
    expect(readme).toContain('make test');
  });
});
