import { describe, expect, it } from 'vitest';
import { AppError } from '#shared/errors.js';
import { bitlyCsv, dubCsv, shlinkCsv, sourceLinks } from '#tests/support/import-fixtures.js';
import { parseExport, parseExportInSlices } from './imports.formats.js';

/** The longest the event loop went without a turn while `run` ran (a 1 ms interval's largest gap). */
async function longestStall(run: () => unknown): Promise<number> {
  let last = performance.now();
  let longest = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, 1);
  await new Promise((resolve) => setTimeout(resolve, 20));
  last = performance.now();
  await run();
  longest = Math.max(longest, performance.now() - last);
  clearInterval(timer);
  return longest;
}

describe('parseExportInSlices reads a file as parseExport does, a slice at a time', () => {
  it('gives the same rows for every source, whatever the slice (quotes, line breaks, non-BMP characters across slice ends)', async () => {
    const links = sourceLinks(60, 'sl').map((link, i) => ({ ...link, title: i % 4 === 0 ? `Emoji 😀 "q",\n${i} — ça` : link.title }));
    for (const [source, csv] of [
      ['shlink', '\uFEFF' + shlinkCsv(links)],
      ['bitly', bitlyCsv(links)],
      ['dub', dubCsv(links)],
    ] as const) {
      const whole = parseExport(source, csv);
      expect(whole).toHaveLength(60);
      for (const slice of [1, 7, 64, 1024]) expect(await parseExportInSlices(source, csv, slice)).toEqual(whole);
    }
  });

  it('refuses what parseExport refuses: not CSV, not the source, too large', async () => {
    const unclosed = 'createdAt,shortCode,longUrl\r\n2021-01-01T00:00:00Z,ok,https://example.com/\r\n"2021-01-01,abc,https://example.com/\r\n';
    for (const csv of [unclosed, 'a,b\r\n1,2\r\n', 'x'.repeat(10 * 1024 * 1024 + 1)]) {
      const sync = (() => {
        try {
          parseExport('shlink', csv);
        } catch (error) {
          return error as AppError;
        }
      })();
      const sliced = (await parseExportInSlices('shlink', csv, 16).catch((error: unknown) => error)) as AppError;
      expect(sliced).toBeInstanceOf(AppError);
      expect([sliced.code, sliced.details]).toEqual([sync!.code, sync!.details]);
    }
  });

  it('lets the event loop turn while it parses a 7 MB export: its longest stall is a fraction of the whole parse’s', async () => {
    const csv = shlinkCsv(sourceLinks(50_000, 'big'));
    const whole = await longestStall(() => parseExport('shlink', csv));
    const sliced = await longestStall(() => parseExportInSlices('shlink', csv));
    process.stdout.write(
      `parse of a ${csv.length}-character Shlink export: longest event-loop stall ${Math.round(whole)} ms whole, ${Math.round(sliced)} ms in slices\n`,
    );
    expect(sliced).toBeLessThan(whole / 3);
  }, 60_000);
});
