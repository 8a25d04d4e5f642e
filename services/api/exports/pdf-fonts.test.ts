import { describe, expect, it } from 'vitest';
import { PLACEHOLDER, runsOf } from './pdf-fonts.js';

const shown = (text: string) => runsOf(text).map(({ font, text: part }) => [font.startsWith('noto-sans-sc') ? 'sc' : font, part]);

describe('runsOf', () => {
  it('takes for each character the first face that has its glyph: DejaVu Sans, then a slice of Noto Sans SC', () => {
    expect(shown('Zürich Москва Ωμέγα')).toEqual([['DejaVuSans', 'Zürich Москва Ωμέγα']]);
    const runs = runsOf('a中文b');
    expect(runs.map((run) => run.text)).toEqual(['a', '中', '文', 'b']);
    expect(runs[1]!.font).toMatch(/^noto-sans-sc-\d+-400-normal$/);
  });

  it('keeps a character in the face of its run while that face has it', () => {
    // The space between two CJK words is drawn by the CJK face, not DejaVu.
    const runs = runsOf('中 中');
    expect(runs).toHaveLength(1);
    expect(runs[0]!.text).toBe('中 中');
  });

  it('shows a character no face has as the placeholder, and leaves out an invisible one', () => {
    expect(shown('🚀x')).toEqual([['DejaVuSans', `${PLACEHOLDER}x`]]);
    // A family joined by zero-width joiners: one placeholder per person, the joiners with them.
    expect(shown('👨\u200D👩\u200D👧')).toEqual([['DejaVuSans', PLACEHOLDER.repeat(3)]]);
    expect(shown('🚀\uFE0F!')).toEqual([['DejaVuSans', `${PLACEHOLDER}!`]]);
    // A variation selector the CJK face lacks is left out; DejaVu has one, which stays.
    expect(runsOf('中\uFE0F中').map((run) => run.text)).toEqual(['中中']);
    expect(shown('a\u2764\uFE0F b')).toEqual([['DejaVuSans', 'a\u2764\uFE0F b']]);
    expect(shown('한')).toEqual([['DejaVuSans', PLACEHOLDER]]);
  });

  it('draws right-to-left words as runs of their own, a sequence of them in reverse order', () => {
    expect(runsOf('see عربي نص, 12 عربي | end').map((run) => [run.text, run.rtl])).toEqual([
      ['see ', false],
      ['عربي', true],
      [', 12 ', false],
      ['نص', true],
      [' ', false],
      ['عربي', true],
      [' | end', false],
    ]);
    expect(runsOf('عربي').map((run) => run.rtl)).toEqual([true]);
  });
});
