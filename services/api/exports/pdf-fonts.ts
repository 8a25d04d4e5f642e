import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as fontkit from 'fontkit';

const require = createRequire(import.meta.url);

/** What stands for a character no face draws (an emoji, Korean Hangul, a script neither font covers). */
export const PLACEHOLDER = '\uFFFD';

interface Face {
  /** The name pdfkit registers the face under. */
  name: string;
  path: string;
  /** The code points the file may hold (its glyphs decide). */
  ranges: [number, number][];
}

/** One `@font-face` of a Fontsource CSS file: its WOFF file (zlib, quick to open; WOFF2 needs brotli at every open) and its unicode-range. */
const FONTSOURCE_FACE = /url\(\.\/files\/([^)]+\.woff)\) format\('woff'\);\s*unicode-range:\s*([^;]+);/g;

/** The regular (400) faces of a Fontsource package, from its CSS: a file per slice of Unicode. */
function fontsourceFaces(pkg: string): Face[] {
  const css = require.resolve(`${pkg}/400.css`);
  const faces: Face[] = [];
  for (const [, file, ranges] of readFileSync(css, 'utf8').matchAll(FONTSOURCE_FACE)) {
    faces.push({
      name: file!.replace(/\.woff$/, ''),
      path: join(dirname(css), 'files', file!),
      ranges: ranges!.split(',').map((range) => {
        const [from, to] = range.trim().slice(2).split('-');
        return [parseInt(from!, 16), parseInt(to ?? from!, 16)];
      }),
    });
  }
  if (faces.length === 0) throw new Error(`no faces in ${css}`);
  return faces;
}

/**
 * The faces of a PDF export, in the order a character looks for one. DejaVu Sans (740 kB, one
 * TrueType file): Latin, Greek, Cyrillic, Hebrew, Arabic with its joining forms each a glyph of
 * its own (so the PDF's text maps back to the letters: Noto Sans Arabic draws several letters
 * with one dotless glyph and its dots, which readers then extract as one letter), U+FFFD. Then
 * Noto Sans SC: Chinese and Japanese kana, shipped by Fontsource as about 100 slices of Unicode
 * (4.7 MB of WOFF for the regular weight), so a document opens only the slices its characters
 * fall in (about 30–60 kB each). pdfkit embeds a subset of what is drawn.
 */
const allFaces = (): Face[] => [
  { name: 'DejaVuSans', path: require.resolve('dejavu-fonts-ttf/ttf/DejaVuSans.ttf'), ranges: [[0, 0x10ffff]] },
  ...fontsourceFaces('@fontsource/noto-sans-sc'),
];

let faces: Face[] | undefined;
/** Opened faces by name, kept for the process: each is read once, when a character first needs it. */
const opened = new Map<string, { bytes: Buffer; font: fontkit.Font }>();

const open = (face: Face) => {
  let known = opened.get(face.name);
  if (!known) {
    const bytes = readFileSync(face.path);
    known = { bytes, font: fontkit.create(bytes) as fontkit.Font };
    opened.set(face.name, known);
  }
  return known;
};

const covers = (face: Face, codePoint: number) => face.ranges.some(([from, to]) => codePoint >= from && codePoint <= to);

/** The first face whose range holds the character and whose font has its glyph. */
function faceFor(codePoint: number): Face | undefined {
  faces ??= allFaces();
  return faces.find((face) => covers(face, codePoint) && open(face).font.hasGlyphForCodePoint(codePoint));
}

/** A run of text drawn in one face, and whether it is a right-to-left word. */
export interface Run {
  font: string;
  text: string;
  rtl: boolean;
}

const IGNORABLE = /^\p{Default_Ignorable_Code_Point}$/u;
/** A right-to-left word: letters of a right-to-left script, with their marks and joiners. */
const RTL_WORD =
  /([\p{Script=Arabic}\p{Script=Hebrew}\p{Script=Syriac}\p{Script=Thaana}][\p{Script=Arabic}\p{Script=Hebrew}\p{Script=Syriac}\p{Script=Thaana}\p{M}\u200C\u200D]*)/u;
/** What may sit between two right-to-left words and go with them: spaces, digits, punctuation. */
const NEUTRAL = /^[\s\p{N}\p{P}]*$/u;

/**
 * Text cut into runs each of one face that has every glyph of the run, in the order they are
 * drawn, left to right. A character stays in the run's face while that face has it, else takes
 * the first face that has it. A character no face has becomes PLACEHOLDER; an invisible one (a
 * variation selector, a zero-width joiner) that the run's face lacks, or that follows a
 * placeholder, is left out. Right-to-left
 * words are runs of their own (fontkit shapes each and lays it right to left), and a sequence of
 * them, with the spaces, digits and punctuation between, is drawn in reverse order: the Unicode
 * bidirectional algorithm's visual order for a left-to-right line, word by word.
 */
export function runsOf(text: string): Run[] {
  const faced: { face: Face; text: string }[] = [];
  let current: Face | undefined;
  const add = (face: Face, chars: string) => {
    if (face !== current || faced.length === 0) faced.push({ face, text: '' });
    current = face;
    faced.at(-1)!.text += chars;
  };
  let placeheld = false;
  for (const char of text) {
    const codePoint = char.codePointAt(0)!;
    const ignorable = IGNORABLE.test(char);
    // What joins or varies a character drawn as the placeholder goes with it.
    if (ignorable && placeheld) continue;
    placeheld = false;
    if (current && open(current).font.hasGlyphForCodePoint(codePoint)) {
      add(current, char);
      continue;
    }
    if (ignorable) continue;
    const face = faceFor(codePoint);
    if (face) add(face, char);
    else {
      add(faceFor(PLACEHOLDER.codePointAt(0)!)!, PLACEHOLDER);
      placeheld = true;
    }
  }
  const runs: Run[] = faced.flatMap(({ face, text: part }) =>
    part
      .split(RTL_WORD)
      .map((piece, index) => ({ font: face.name, text: piece, rtl: index % 2 === 1 }))
      .filter((run) => run.text !== ''),
  );
  for (let start = 0; start < runs.length; start++) {
    if (!runs[start]!.rtl) continue;
    let end = start;
    for (let next = start + 1; next < runs.length && (runs[next]!.rtl || NEUTRAL.test(runs[next]!.text)); next++) if (runs[next]!.rtl) end = next;
    runs.splice(start, end - start + 1, ...runs.slice(start, end + 1).reverse());
    start = end;
  }
  return runs;
}

const ELLIPSIS = '\u2026';

/** Runs cut to `width` at the current font size, an ellipsis (in the face of the run it ends) where they were cut. */
function fitted(doc: PDFKit.PDFDocument, runs: Run[], width: number): Run[] {
  const widthOf = (font: string, text: string) => doc.font(font).widthOfString(text);
  let used = 0;
  for (const [index, run] of runs.entries()) {
    const runWidth = widthOf(run.font, run.text);
    if (used + runWidth <= width) {
      used += runWidth;
      continue;
    }
    const room = width - used - widthOf(run.font, ELLIPSIS);
    const chars = [...run.text];
    // The longest start that fits, by bisection (a user agent runs to hundreds of characters).
    let [kept, over] = [0, chars.length];
    while (over - kept > 1) {
      const middle = (kept + over) >> 1;
      if (widthOf(run.font, chars.slice(0, middle).join('')) <= room) kept = middle;
      else over = middle;
    }
    return [...runs.slice(0, index), { ...run, text: chars.slice(0, kept).join('') + ELLIPSIS }];
  }
  return runs;
}

/**
 * A document's text writer: `write(text, options, at)` draws the text run by run in the faces that
 * have its glyphs (pdfkit's `continued` joins the runs into one line or paragraph), registering
 * each face with the document the first time it is used (pdfkit embeds a subset of each at the end).
 */
export function unicodeText(doc: PDFKit.PDFDocument) {
  const registered = new Set<string>();
  return (text: string, options: PDFKit.Mixins.TextOptions = {}, at?: { x: number; y: number }) => {
    let runs = runsOf(text);
    if (runs.length === 0) runs.push({ font: faceFor(0x20)!.name, text: '', rtl: false });
    for (const { font } of runs) {
      if (registered.has(font)) continue;
      doc.registerFont(font, opened.get(font)!.bytes);
      registered.add(font);
    }
    // One line cut to its width: pdfkit's own ellipsis acts on each run alone, so the runs are cut here.
    if (options.lineBreak === false && options.width !== undefined) {
      runs = fitted(doc, runs, options.width);
      options = { ...options, ellipsis: false };
    }
    for (const [index, run] of runs.entries()) {
      const continued = index < runs.length - 1;
      doc.font(run.font);
      if (index === 0 && at) doc.text(run.text, at.x, at.y, { ...options, continued });
      else doc.text(run.text, { ...options, continued });
    }
    return doc;
  };
}
