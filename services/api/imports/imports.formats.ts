import { parse as parseStream } from 'csv-parse';
import { parse } from 'csv-parse/sync';
import { AppError } from '#shared/errors.js';
import type { ImportedLink } from '../links/links.service.js';

/** The CSV exports the importer reads (docs/importers.md says where each format is described). */
export const CSV_SOURCES = ['bitly', 'dub', 'shlink'] as const;
export type CsvSource = (typeof CSV_SOURCES)[number];

/** The largest file an import takes: 10 MiB, some 50 000 links of a typical export. */
export const IMPORT_MAX_BYTES = 10 * 1024 * 1024;

/** One data row of a file: its line in the file (1 is the header) and the link, or why it cannot be read. */
export type ParsedRow = { line: number } & ({ link: ImportedLink } | { error: 'slug_missing' | 'target_missing' | 'created_at_invalid' });

/** How a source names its columns (matched case-insensitively) and writes its values. */
interface Format {
  slug: string[];
  target: string[];
  title: string[];
  tags: string[];
  created: string[];
  /** The slug from the column's value (a short URL or a bare short code). */
  slugOf: (value: string) => string;
  tagSeparator: RegExp;
}

/** The path of a short URL, with or without a scheme (`bit.ly/abc`, `https://dub.sh/abc`): its last segment. */
const lastSegment = (value: string): string => {
  const path = value
    .trim()
    .replace(/^[a-z][a-z0-9+.-]*:\/\//i, '')
    .split(/[?#]/)[0]!;
  const at = path.indexOf('/');
  return at < 0 ? '' : path.slice(at + 1).replace(/\/+$/, '');
};

const FORMATS: Record<CsvSource, Format> = {
  // Bitly's links export: link, long_url, title, created_at, tags (the API v4 field names, which its CSV headers follow).
  bitly: {
    slug: ['link', 'bitlink', 'short link'],
    target: ['long_url', 'long url', 'destination url'],
    title: ['title'],
    tags: ['tags'],
    created: ['created_at', 'created', 'date created'],
    slugOf: lastSegment,
    tagSeparator: /[,;]/,
  },
  // Dub's links export: "Short link", "Destination URL", "Created at", "Tags" (", "-separated); it has no title.
  dub: {
    slug: ['short link', 'link'],
    target: ['destination url', 'url'],
    title: [],
    tags: ['tags'],
    created: ['created at'],
    slugOf: lastSegment,
    tagSeparator: /,/,
  },
  // The Shlink web client's export (short_urls.csv): createdAt, domain, shortCode, shortUrl, longUrl, title, tags (`|`-separated), visits.
  shlink: {
    slug: ['shortcode'],
    target: ['longurl'],
    title: ['title'],
    tags: ['tags'],
    created: ['createdat'],
    slugOf: (value) => value.trim(),
    tagSeparator: /\|/,
  },
};

/**
 * The rows of a source's CSV export. A file over IMPORT_MAX_BYTES is 413 `payload_too_large`; one that
 * is not CSV, or lacks the slug or target column, is 422 `validation_error` (nothing is imported).
 */
export function parseExport(source: CsvSource, csv: string): ParsedRow[] {
  if (Buffer.byteLength(csv) > IMPORT_MAX_BYTES) throw new AppError('payload_too_large', { file: `at most ${IMPORT_MAX_BYTES} bytes` });
  let records: string[][];
  try {
    records = parse(csv, CSV_OPTIONS);
  } catch (error) {
    throw notCsv(error);
  }
  return rowsOf(source, records);
}

const CSV_OPTIONS = { bom: true, skip_empty_lines: true, relax_column_count: false, trim: false } as const;
const notCsv = (error: unknown) => new AppError('validation_error', { file: `not a CSV file: ${(error as Error).message}` });

/** Characters parseExportInSlices reads between two turns of the event loop (a few milliseconds of parsing). */
export const PARSE_SLICE_CHARS = 64 * 1024;

/**
 * parseExport for a job: the file is parsed in slices of `slice` characters, yielding to the event
 * loop between them, so that a 10 MiB file does not hold it for the whole parse (the job's process
 * is the API's too in the one-process platform). Same rows, same refusals.
 */
export async function parseExportInSlices(source: CsvSource, csv: string, slice = PARSE_SLICE_CHARS): Promise<ParsedRow[]> {
  if (Buffer.byteLength(csv) > IMPORT_MAX_BYTES) throw new AppError('payload_too_large', { file: `at most ${IMPORT_MAX_BYTES} bytes` });
  const records: string[][] = [];
  let failure: unknown;
  const parser = parseStream(CSV_OPTIONS);
  parser.on('data', (record: string[]) => records.push(record));
  const ended = new Promise<void>((resolve) => {
    parser.once('end', resolve);
    // Every error (a write after the first one fails too) is heard; the first is the file's.
    parser.on('error', (error) => {
      failure ??= error;
      resolve();
    });
  });
  for (let at = 0; at < csv.length && failure === undefined;) {
    let end = Math.min(at + slice, csv.length);
    // A slice never ends between the two halves of a surrogate pair (each slice is encoded on its own).
    const last = csv.charCodeAt(end - 1);
    if (end < csv.length && last >= 0xd800 && last <= 0xdbff) end += end - 1 > at ? -1 : 1;
    parser.write(csv.slice(at, end));
    at = end;
    await new Promise((resolve) => setImmediate(resolve));
  }
  if (failure === undefined) parser.end();
  await ended;
  if (failure !== undefined) throw notCsv(failure);
  return rowsOf(source, records);
}

/** The rows of a parsed file (its records, the header first), by the source's columns. */
function rowsOf(source: CsvSource, records: string[][]): ParsedRow[] {
  const format = FORMATS[source];
  const header = (records[0] ?? []).map((name) => name.trim().toLowerCase());
  const column = (names: string[]) => header.findIndex((name) => names.includes(name));
  const at = {
    slug: column(format.slug),
    target: column(format.target),
    title: column(format.title),
    tags: column(format.tags),
    created: column(format.created),
  };
  if (at.slug < 0 || at.target < 0) throw new AppError('validation_error', { file: `not a ${source} export: no ${at.slug < 0 ? 'slug' : 'target'} column` });
  const cell = (record: string[], index: number) => (index < 0 ? '' : (record[index] ?? '').trim());
  return records.slice(1).map((record, index): ParsedRow => {
    const line = index + 2;
    const slug = format.slugOf(cell(record, at.slug));
    if (!slug) return { line, error: 'slug_missing' };
    const target = cell(record, at.target);
    if (!target) return { line, error: 'target_missing' };
    const created = cell(record, at.created);
    const createdAt = created ? new Date(created) : null;
    if (createdAt && Number.isNaN(createdAt.getTime())) return { line, error: 'created_at_invalid' };
    const tags = cell(record, at.tags)
      .split(format.tagSeparator)
      .map((tag) => tag.trim())
      .filter((tag) => tag !== '');
    return { line, link: { slug, target_url: target, title: cell(record, at.title) || null, tags, created_at: createdAt } };
  });
}
