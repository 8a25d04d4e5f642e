import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '#shared/paths.js';
import { CONFIG_DOC, END, START, renderConfigTable } from '#scripts/config-table.js';

const read = (path: string): string => readFileSync(join(PROJECT_ROOT, path), 'utf8');
const readme = read('README.md');
const DOCS = [
  'README.md',
  ...readdirSync(join(PROJECT_ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchorOf(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a markdown file's headings (code blocks left out). */
function anchorsOf(text: string): Set<string> {
  const outside = text.replace(/```[\s\S]*?```/g, '');
  return new Set([...outside.matchAll(/^#{1,6} (.+)$/gm)].map((match) => anchorOf(match[1]!)));
}

describe('README and docs/', () => {
  it('docs/configuration.md holds the configuration table generated from the config schema (npm run docs:config)', () => {
    const doc = read(CONFIG_DOC);
    const start = doc.indexOf(START);
    const end = doc.indexOf(END);
    expect(start).toBeGreaterThan(0);
    expect(doc.slice(start + START.length, end).trim()).toBe(renderConfigTable());
  });

  it('the README shows the two-command quickstart', () => {
    expect(readme).toContain('make run');
    expect(readme).toContain('make test');
  });

  it('the README leads to every document of docs/', () => {
    for (const doc of DOCS.filter((path) => path !== 'README.md')) expect(readme, doc).toContain(`](${doc})`);
  });

  it('every relative link of the README and docs/ names a file that exists, and a heading there when it has an anchor', () => {
    const broken: string[] = [];
    for (const doc of DOCS) {
      const text = read(doc);
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const [file, anchor] = target!.split('#') as [string, string | undefined];
        const path = file === '' ? doc : relative(PROJECT_ROOT, join(PROJECT_ROOT, dirname(doc), file));
        if (!existsSync(join(PROJECT_ROOT, path))) broken.push(`${doc}: ${target} (no file ${path})`);
        else if (anchor !== undefined && !anchorsOf(read(path)).has(anchor)) broken.push(`${doc}: ${target} (no heading #${anchor} in ${path})`);
      }
    }
    expect(broken).toEqual([]);
  });
});
