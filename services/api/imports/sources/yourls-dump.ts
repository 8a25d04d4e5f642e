import { AppError } from '#shared/errors.js';
import type { SourceVisit } from './history.js';
import type { SourceLinkWithHistory } from './shlink-api.js';

/**
 * The largest YOURLS database export an import takes: 64 MiB, some 300 000 log rows (about 200 bytes a
 * click). A larger installation exports `yourls_log` in ranges (mysqldump --where) beside `yourls_url`
 * and imports each: the import is idempotent, so the links and the clicks of one range come in once.
 */
export const YOURLS_DUMP_MAX_BYTES = 64 * 1024 * 1024;

/**
 * The columns of YOURLS's tables in their order (YOURLS/YOURLS, includes/functions-install.php,
 * yourls_create_sql_tables): what an INSERT without a column list (mysqldump's default) fills.
 */
const URL_COLUMNS = ['keyword', 'url', 'title', 'timestamp', 'ip', 'clicks'];
const LOG_COLUMNS = ['click_id', 'click_time', 'shorturl', 'referrer', 'user_agent', 'ip_address', 'country_code'];

type Value = string | null;

/** MySQL's escapes in a quoted string (mysqldump writes \0 \' \" \b \n \r \t \Z \\). */
const ESCAPES: Record<string, string> = { '0': '\0', b: '\b', n: '\n', r: '\r', t: '\t', Z: '\x1a' };

/**
 * The statements of a MySQL dump, split on `;` outside strings, identifiers and comments (`-- `, `#`,
 * `/* … *\/`, mysqldump's `/*!40101 … *\/` included), each with its strings kept as written.
 */
function* statements(sql: string): Generator<string> {
  let start = 0;
  let i = 0;
  const n = sql.length;
  let text = '';
  while (i < n) {
    const c = sql[i]!;
    if (c === "'" || c === '"' || c === '`') {
      let j = i + 1;
      while (j < n) {
        if (sql[j] === '\\' && c !== '`') j += 2;
        else if (sql[j] === c) {
          if (sql[j + 1] === c) j += 2;
          else break;
        } else j++;
      }
      i = j + 1;
    } else if ((c === '-' && sql[i + 1] === '-' && /\s/.test(sql[i + 2] ?? ' ')) || c === '#') {
      text += sql.slice(start, i);
      const end = sql.indexOf('\n', i);
      i = end < 0 ? n : end + 1;
      start = i;
    } else if (c === '/' && sql[i + 1] === '*') {
      text += sql.slice(start, i);
      const end = sql.indexOf('*/', i + 2);
      i = end < 0 ? n : end + 2;
      start = i;
    } else if (c === ';') {
      text += sql.slice(start, i);
      if (text.trim()) yield text.trim();
      text = '';
      i++;
      start = i;
    } else i++;
  }
  text += sql.slice(start);
  if (text.trim()) yield text.trim();
}

/** The rows of `VALUES (…),(…)`: quoted strings unescaped, NULL as null, numbers and other words as written. */
function tuples(values: string): Value[][] {
  const rows: Value[][] = [];
  let row: Value[] | null = null;
  let i = 0;
  const n = values.length;
  while (i < n) {
    const c = values[i]!;
    if (c === '(' && !row) {
      row = [];
      i++;
    } else if (c === ')' && row) {
      rows.push(row);
      row = null;
      i++;
    } else if (row && (c === "'" || c === '"')) {
      let value = '';
      let j = i + 1;
      while (j < n && !(values[j] === c && values[j + 1] !== c)) {
        if (values[j] === '\\') {
          const next = values[j + 1] ?? '';
          value += ESCAPES[next] ?? next;
          j += 2;
        } else if (values[j] === c) {
          value += c;
          j += 2;
        } else value += values[j++];
      }
      row.push(value);
      i = j + 1;
    } else if (row && /[^\s,]/.test(c)) {
      const match = /^[^\s,)]+/.exec(values.slice(i, i + 64))!;
      row.push(/^null$/i.test(match[0]) ? null : match[0]);
      i += match[0].length;
    } else i++;
  }
  return rows;
}

const INSERT = /^INSERT\s+(?:IGNORE\s+)?INTO\s+`?([\w$]+)`?\s*(\(([^)]*)\))?\s*VALUES\s*/i;
const CREATE = /^CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?`?([\w$]+)`?\s*\(/i;

/** A YOURLS DATETIME (`2024-06-30 12:00:00`, no zone: read as UTC) as a Date; null when it is none. */
const utc = (value: Value): Date | null => {
  if (!value || !/^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}$/.test(value) || value.startsWith('0000')) return null;
  const date = new Date(`${value.replace(' ', 'T')}Z`);
  return Number.isNaN(date.getTime()) ? null : date;
};

/**
 * The links and visit history of a YOURLS database export: the `<prefix>url` and `<prefix>log`
 * tables as mysqldump or phpMyAdmin's SQL export writes them (INSERT statements, with or without a
 * column list; other tables and statements are ignored). YOURLS has no tags; a referrer YOURLS stored
 * as `direct` is none. A file over YOURLS_DUMP_MAX_BYTES is 413 `payload_too_large`; one holding no
 * rows of `<prefix>url` is 422 `validation_error`.
 */
export function yourlsDump(dump: string, prefix = 'yourls_'): { links: () => Promise<SourceLinkWithHistory[]> } {
  if (Buffer.byteLength(dump) > YOURLS_DUMP_MAX_BYTES) throw new AppError('payload_too_large', { dump: `at most ${YOURLS_DUMP_MAX_BYTES} bytes` });
  const tables = { url: `${prefix}url`.toLowerCase(), log: `${prefix}log`.toLowerCase() };
  const declared = new Map<string, string[]>();
  const urls: Record<string, Value>[] = [];
  const logs = new Map<string, SourceVisit[]>();
  for (const statement of statements(dump)) {
    const create = CREATE.exec(statement);
    if (create) {
      const columns = [...statement.matchAll(/^\s*`([\w$]+)`\s+\w/gm)].map((match) => match[1]!.toLowerCase());
      declared.set(create[1]!.toLowerCase(), columns);
      continue;
    }
    const insert = INSERT.exec(statement);
    if (!insert) continue;
    const table = insert[1]!.toLowerCase();
    if (table !== tables.url && table !== tables.log) continue;
    const columns = insert[3]
      ? insert[3].split(',').map((name) => name.trim().replace(/`/g, '').toLowerCase())
      : (declared.get(table) ?? (table === tables.url ? URL_COLUMNS : LOG_COLUMNS));
    for (const values of tuples(statement.slice(insert[0].length))) {
      const row = Object.fromEntries(columns.map((name, index) => [name, values[index] ?? null]));
      if (table === tables.url) {
        urls.push(row);
        continue;
      }
      const keyword = row.shorturl ?? '';
      const list = logs.get(keyword) ?? [];
      if (list.length === 0) logs.set(keyword, list);
      list.push({
        key: row.click_id ?? JSON.stringify(row),
        ts: utc(row.click_time ?? null) ?? new Date(NaN),
        referrer: !row.referrer || row.referrer === 'direct' ? '' : row.referrer,
        user_agent: row.user_agent ?? '',
        ip: row.ip_address ?? '',
        country: row.country_code ?? '',
      });
    }
  }
  if (urls.length === 0) throw new AppError('validation_error', { dump: `no rows of ${tables.url}: not a YOURLS database export` });
  return {
    links: async () =>
      urls.map((row) => ({
        link: { slug: row.keyword ?? '', target_url: row.url ?? '', title: row.title || null, tags: [], created_at: utc(row.timestamp ?? null) },
        visits: async () => logs.get(row.keyword ?? '') ?? [],
      })),
  };
}
