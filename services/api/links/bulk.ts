import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { parse } from 'csv-parse/sync';
import type { z } from 'zod';
import { FORMULA_LEAD } from '#shared/analytics/exports.repository.js';
import type { Context } from '#shared/context.js';
import { AppError } from '#shared/errors.js';
import type { EventBus, EventDraft } from '#shared/events/events.js';
import type { Principal } from '#shared/http/auth.js';
import { pagingOf } from '#shared/http/pagination.js';
import { validateRequest } from '#shared/http/register.js';
import { t, translateRules, type Locale } from '#shared/i18n/index.js';
import { inPostgresTransaction } from '#services/repositories.js';
import { subdomainsService, type SubdomainsService } from '../subdomains/subdomains.service.js';
import { linksService, type LinksDeps, type LinksService, type LinkView, type NewLinkInput } from './links.service.js';

/** Rows of one bulk upload, at most. */
export const BULK_MAX_ROWS = 10_000;
/** The largest bulk body: 10 000 rows of about 1.6 KB each, rules and variants included. */
export const BULK_BODY_LIMIT = 16 * 1024 * 1024;
export const BULK_MODES = ['all_or_none', 'valid_only'] as const;
export type BulkMode = (typeof BULK_MODES)[number];
/** Rows created between two yields to the event loop. */
const CHUNK = 100;

/** One refused row: its number (1 = the first link; in a CSV, the line after the header), the first field named, and the error as the envelope writes it. */
export interface BulkRowError {
  row: number;
  field: string | null;
  code: string;
  message: string;
  details: Record<string, unknown>;
}

export interface BulkResult {
  mode: BulkMode;
  rows: number;
  /** Links this upload created. */
  created: LinkView[];
  /** Links an earlier upload created with the same client_id (answered, not created again). */
  existing: LinkView[];
  errors: BulkRowError[];
}

/** Columns of the CSV export that the platform writes and an import leaves aside. */
export const EXPORT_ONLY_COLUMNS: ReadonlySet<string> = new Set([
  'id',
  'short_url',
  'state',
  'limit_reached_at',
  'created_at',
  'updated_at',
  'deleted_at',
  'clicks',
  // Whether a password protects the link: the password itself is never exported, so it cannot travel in the file.
  'has_password',
]);
/** The export's first columns, in this order; any other field of a link follows them. */
const EXPORT_COLUMNS = [
  'subdomain',
  'slug',
  'target_url',
  'title',
  'tags',
  'expires_at',
  'max_visits',
  'redirect_type',
  'append_visit_id',
  'client_id',
  'id',
  'short_url',
  'state',
  'created_at',
] as const;

/** The visit exports' formula test (shared/analytics/exports.repository.ts) in JavaScript's syntax. */
const FORMULA = new RegExp(FORMULA_LEAD.replace(/\\x\{([0-9A-F]+)\}/g, '\\u{$1}'), 'u');

/** A text cell as a spreadsheet may open it: behind a single quote when it starts like a formula, as the visit exports write it. */
export function safeCell(value: string): string {
  return FORMULA.test(value) ? `'${value}` : value;
}

/** The exported cell back: the single quote safeCell put before a formula-like text is removed. */
function unquoteCell(value: string): string {
  return value.startsWith("'") && FORMULA.test(value.slice(1)) ? value.slice(1) : value;
}

function csvQuote(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

type ZodLike = { _zod: { def: { type: string; innerType?: ZodLike; options?: ZodLike[]; values?: unknown[]; in?: ZodLike; element?: ZodLike } } };

/** What a CSV cell of a field becomes: the field's schema says whether it is a number, a flag, a list of words or JSON. */
function cellKind(schema: ZodLike | undefined): 'string' | 'number' | 'boolean' | 'words' | 'json' {
  let def = schema?._zod.def;
  while (def && (def.type === 'optional' || def.type === 'nullable' || def.type === 'default' || def.type === 'pipe')) {
    def = (def.type === 'pipe' ? def.in : def.innerType)?._zod.def;
  }
  if (!def) return 'string';
  if (def.type === 'number' || def.type === 'int') return 'number';
  if (def.type === 'boolean') return 'boolean';
  if (def.type === 'union' && def.options?.every((option) => option._zod.def.type === 'literal' && typeof option._zod.def.values?.[0] === 'number'))
    return 'number';
  if (def.type === 'array') return def.element?._zod.def.type === 'string' ? 'words' : 'json';
  if (def.type === 'object' || def.type === 'union' || def.type === 'record') return 'json';
  return 'string';
}

function cellValue(kind: ReturnType<typeof cellKind>, cell: string): unknown {
  switch (kind) {
    case 'number':
      return /^-?\d+(\.\d+)?$/.test(cell.trim()) ? Number(cell) : cell;
    case 'boolean':
      return cell.trim().toLowerCase() === 'true' ? true : cell.trim().toLowerCase() === 'false' ? false : cell;
    case 'words':
      return cell.split(/[|,\s]+/).filter((word) => word !== '');
    case 'json':
      try {
        return JSON.parse(cell) as unknown;
      } catch {
        return cell;
      }
    default:
      return cell;
  }
}

/**
 * The rows of a bulk CSV: a header naming the link fields, one link per line. An empty cell leaves
 * its field out; numbers, flags, tags (separated by `|`, `,` or spaces) and JSON fields (rules,
 * variants) are read as the create body's schema types them; columns the export writes for people
 * (id, short_url, state, created_at…) are left aside, so an export imports again.
 */
export function parseBulkCsv(csv: string, body: z.ZodType): Record<string, unknown>[] {
  let records: string[][];
  try {
    records = parse(csv.replace(/^\uFEFF/, ''), { relax_column_count: false, skip_empty_lines: true });
  } catch (error) {
    throw new AppError('bad_request', { csv: (error as Error).message });
  }
  const [header, ...lines] = records;
  if (!header) throw new AppError('bad_request', { csv: 'the file is empty: a header row naming the link fields comes first' });
  if (lines.length > BULK_MAX_ROWS) throw tooMany(lines.length);
  const shape = (body as unknown as { shape?: Record<string, ZodLike> }).shape ?? {};
  const columns = header.map((name) => name.trim());
  const kinds = columns.map((name) => cellKind(shape[name]));
  return lines.map((line) => {
    const row: Record<string, unknown> = {};
    line.forEach((cell, index) => {
      const name = columns[index]!;
      if (cell === '' || EXPORT_ONLY_COLUMNS.has(name)) return;
      row[name] = cellValue(kinds[index]!, unquoteCell(cell));
    });
    return row;
  });
}

const tooMany = (rows: number) =>
  new AppError('payload_too_large', { rows: `at most ${BULK_MAX_ROWS} links in one upload; this one has ${rows}: split it`, limit: BULK_MAX_ROWS });

/** A link as one CSV line of the export, in `columns`' order. */
function exportLine(view: LinkView, columns: string[]): string {
  return columns
    .map((column) => {
      const value = (view as unknown as Record<string, unknown>)[column];
      if (value === null || value === undefined) return '';
      if (column === 'tags' && Array.isArray(value)) return csvQuote(value.join('|'));
      if (typeof value === 'object') return csvQuote(safeCell(JSON.stringify(value)));
      if (typeof value === 'number' || typeof value === 'boolean') return String(value);
      if (typeof value !== 'string') return '';
      return csvQuote(safeCell(value));
    })
    .join(',');
}

export interface BulkDeps extends LinksDeps {
  db: Context['db'];
}

/**
 * Bulk creation and export of links. Each row goes through the links service's own create (its
 * validation, slug rules and client_id replay), so a field the create learns flows through here
 * unchanged. `all_or_none` runs every create in one transaction, over services built on it, and
 * rolls it back at the first refused row's end of pass; the edge notices and link.created events
 * are sent only after the commit.
 */
export function bulkLinksService(deps: BulkDeps, links: LinksService, createBody: z.ZodType) {
  const rowError = (row: number, error: AppError, locale: Locale): BulkRowError => {
    const details = translateRules(locale, error.details);
    const named = Array.isArray(error.details.missing)
      ? String(error.details.missing[0])
      : Array.isArray(error.details.unknown)
        ? String(error.details.unknown[0])
        : Object.keys(details)[0];
    return { row, field: named ?? null, code: error.code, message: t(locale, error.messageKey ?? `error.${error.code}`, error.params), details };
  };

  /** Each row checked against the create body's schema: the valid inputs by row number, and the refused. */
  const checkRows = async (rows: unknown[], locale: Locale) => {
    const valid: { row: number; input: NewLinkInput }[] = [];
    const errors: BulkRowError[] = [];
    for (const [index, raw] of rows.entries()) {
      if (index > 0 && index % CHUNK === 0) await yieldToLoop();
      try {
        valid.push({ row: index + 1, input: validateRequest([{ part: 'body', schema: createBody, input: raw }], locale).body as NewLinkInput });
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        errors.push(rowError(index + 1, error, locale));
      }
    }
    return { valid, errors };
  };

  /** Creates the rows with `service`, one after another (a slug taken by an earlier row is that row's conflict), yielding between chunks. */
  const createAll = async (service: LinksService, principal: Principal, valid: { row: number; input: NewLinkInput }[], locale: Locale, result: BulkResult) => {
    for (const [index, { row, input }] of valid.entries()) {
      if (index > 0 && index % CHUNK === 0) await yieldToLoop();
      try {
        const { link, replay } = await service.create(principal, input);
        (replay ? result.existing : result.created).push(link);
      } catch (error) {
        if (!(error instanceof AppError) || error.status >= 500) throw error;
        result.errors.push(rowError(row, error, locale));
      }
    }
  };

  class RolledBack extends Error {}

  /**
   * An event bus that keeps the events of the links a bulk creates, and the function that publishes
   * them together once the links are in: one write of the event log (each `emit` would wait for the
   * durable log's 50 ms group commit, 10 000 rows took 570 s that way). As `emit`, a failure is
   * counted and logged, not thrown: the links stand.
   */
  const heldEvents = (): { events: EventBus; publish: () => Promise<void> } => {
    const drafts: EventDraft[] = [];
    return {
      events: {
        ...deps.events,
        emit: async (type, { ownerId, subdomain }, data) => {
          drafts.push({ type, ownerId, subdomain, data });
          return undefined;
        },
      },
      publish: async () => {
        try {
          await deps.events.emitMany(drafts.splice(0));
        } catch (error) {
          deps.metrics.eventPublishFailures.inc({ event: 'link.created' });
          deps.log.error({ err: error }, 'events of a bulk create could not be published');
        }
      },
    };
  };

  return {
    /** Parses a CSV upload into rows, typed by the create body's schema. */
    parseCsv: (csv: string) => parseBulkCsv(csv, createBody),

    /** Creates links from rows as POST /api/v1/links takes them: every row is checked first; see BulkMode. */
    async create(principal: Principal, rows: unknown[], mode: BulkMode, locale: Locale): Promise<BulkResult> {
      if (rows.length > BULK_MAX_ROWS) throw tooMany(rows.length);
      const result: BulkResult = { mode, rows: rows.length, created: [], existing: [], errors: [] };
      const { valid, errors } = await checkRows(rows, locale);
      result.errors.push(...errors);
      if (mode === 'valid_only') {
        const held = heldEvents();
        await createAll(linksService({ ...deps, events: held.events }), principal, valid, locale, result);
        await held.publish();
        result.errors.sort((a, b) => a.row - b.row);
        return result;
      }
      if (errors.length > 0) return result;
      // Notices and events wait for the commit: a rolled-back link must never reach an edge cache or a webhook.
      const held: (() => Promise<unknown>)[] = [];
      const cache = new Proxy(deps.cache, {
        get: (target, key, receiver) =>
          key === 'publish'
            ? (channel: string, message: string) => void held.push(() => target.publish(channel, message))
            : (Reflect.get(target, key, receiver) as unknown),
      });
      const events = heldEvents();
      try {
        await inPostgresTransaction(deps, async (repositories) => {
          const scoped = { ...deps, cache, repositories };
          const subdomains: SubdomainsService = subdomainsService(scoped);
          await createAll(linksService({ ...scoped, subdomains, events: events.events }), principal, valid, locale, result);
          if (result.errors.length > 0) throw new RolledBack();
        });
      } catch (error) {
        if (!(error instanceof RolledBack)) throw error;
        result.created = [];
        result.existing = [];
        return result;
      }
      for (const send of held) await send();
      await events.publish();
      return result;
    },

    /** The caller's links matching the list's filters, as CSV (header first); another's subdomain is refused. */
    async exportCsv(principal: Principal, filters: { subdomain?: string; q?: string; tag?: string; since?: string }): Promise<string> {
      if (filters.subdomain !== undefined) await deps.subdomains.managed(principal, filters.subdomain, 'viewer');
      const views: LinkView[] = [];
      let cursor: string | undefined;
      do {
        const page = await links.list(principal, filters, pagingOf({ limit: 100, cursor }));
        views.push(...(page.items as LinkView[]));
        cursor = page.meta.next_cursor ?? undefined;
        await yieldToLoop();
      } while (cursor);
      const extra = [...new Set(views.flatMap((view) => Object.keys(view)))].filter(
        (key) => !(EXPORT_COLUMNS as readonly string[]).includes(key) && !EXPORT_ONLY_COLUMNS.has(key),
      );
      const columns = [...EXPORT_COLUMNS, ...extra];
      return `\uFEFF${[columns.join(','), ...views.map((view) => exportLine(view, columns))].join('\r\n')}\r\n`;
    },
  };
}

export type BulkLinksService = ReturnType<typeof bulkLinksService>;
