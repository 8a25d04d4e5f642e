/**
 * CSV exports of other shorteners, written as each writes them (docs/importers.md names the sources),
 * for the importer's tests: header row first, every cell double-quoted with inner quotes doubled.
 */

export interface SourceLink {
  slug: string;
  target: string;
  title: string;
  tags: string[];
  created: Date;
}

const cell = (value: string | number): string => `"${String(value).replaceAll('"', '""')}"`;
const csv = (header: string[], rows: (string | number)[][]): string => [header, ...rows].map((row) => row.map(cell).join(',')).join('\r\n') + '\r\n';

/** `count` distinct links with a prefix: slugs, targets, titles (some with commas and quotes), tags and creation times. */
export function sourceLinks(count: number, prefix: string): SourceLink[] {
  return Array.from({ length: count }, (_, i) => ({
    slug: `${prefix}${i}`,
    target: `https://example.com/${prefix}/${i}?q=${i}`,
    title: i % 3 === 0 ? `Title "${i}", quoted` : `Title ${i}`,
    tags: i % 2 === 0 ? ['even', `t${i % 5}`] : [],
    created: new Date(Date.UTC(2021, 0, 1) + i * 3_600_000),
  }));
}

/** The Shlink web client's short_urls.csv: createdAt, domain, shortCode, shortUrl, longUrl, title, tags (`|`), visits. */
export function shlinkCsv(links: SourceLink[]): string {
  return csv(
    ['createdAt', 'domain', 'shortCode', 'shortUrl', 'longUrl', 'title', 'tags', 'visits'],
    links.map((l, i) => [
      l.created.toISOString().replace('.000Z', '+00:00'),
      's.test',
      l.slug,
      `https://s.test/${l.slug}`,
      l.target,
      l.title,
      l.tags.join('|'),
      i,
    ]),
  );
}

/** Bitly's links export: link (bit.ly/…), long_url, title, created_at, tags (comma-separated). */
export function bitlyCsv(links: SourceLink[]): string {
  return csv(
    ['title', 'link', 'long_url', 'created_at', 'tags'],
    links.map((l) => [l.title, `bit.ly/${l.slug}`, l.target, l.created.toISOString().replace('.000Z', '+0000'), l.tags.join(',')]),
  );
}

/**
 * Dub's links export with every column chosen: Short link, Destination URL, Clicks, Leads, Conversions, Revenue,
 * Created at, Link ID, Updated at, Tags (", "-separated), Archived. Dub exports no title.
 */
export function dubCsv(links: SourceLink[]): string {
  return csv(
    ['Short link', 'Destination URL', 'Clicks', 'Leads', 'Conversions', 'Revenue', 'Created at', 'Link ID', 'Updated at', 'Tags', 'Archived'],
    links.map((l, i) => [
      `https://dub.sh/${l.slug}`,
      l.target,
      i,
      0,
      0,
      '0.00',
      l.created.toISOString(),
      `link_${i}`,
      l.created.toISOString(),
      l.tags.join(', '),
      'No',
    ]),
  );
}
