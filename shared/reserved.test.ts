import { describe, expect, it } from 'vitest';
import { RATE_BUCKETS } from './config.js';
import { AppError, ERROR_CATALOGUE, ERROR_CODES, type LiveErrorCode } from './errors.js';
import { EVENT_TYPES, LIVE_EVENT_TYPES, type EventBus } from './events/events.js';
import { SCOPES } from './http/scopes.js';
import { isTest, matchingLines, projectSources } from '#tests/support/sources.js';
import { RESERVED_ERRORS, RESERVED_EVENT_TYPES, RESERVED_RATE_BUCKETS, RESERVED_ROUTES, RESERVED_SCOPES } from './reserved.js';

/** The reserved module itself and the files that compose its lists into the live catalogues. */
const COMPOSERS = new Set(['shared/reserved.ts', 'shared/errors.ts', 'shared/events/events.ts', 'shared/config.ts', 'shared/http/scopes.ts']);

/**
 * The live code: every TypeScript source of services/ and shared/ but tests, the composers and the
 * message catalogues (which translate every code of the catalogue, for GET /api/v1/errors).
 */
function liveSources(): { path: string; text: string }[] {
  return [...projectSources(['services', 'shared'])]
    .filter(([path]) => !isTest(path) && !COMPOSERS.has(path) && !path.startsWith('shared/i18n/locales/'))
    .map(([path, text]) => ({ path, text }));
}

/** `name` in quotes of any kind, as code spells a literal. */
const quoted = (name: string): string => `['"\`]${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}['"\`]`;

/** Where a pattern matches in the live code: `path: line` for each. */
function matchesIn(sources: { path: string; text: string }[], pattern: RegExp): string[] {
  return sources.flatMap(({ path, text }) => matchingLines(text, [{ what: '', pattern }]).map((found) => `${path}:${found.line}: ${found.text}`));
}

const sources = liveSources();

describe('reserved, not live', () => {
  it('finds the live code it searches', () => {
    // A guard against a walk that silently finds nothing (a moved folder): these files raise and emit.
    const paths = sources.map((source) => source.path);
    expect(paths).toContain('services/api/reserved/reserved.routes.ts');
    expect(matchesIn(sources, new RegExp(`AppError\\(\\s*${quoted('not_owner')}`)).length).toBeGreaterThan(0);
    expect(matchesIn(sources, new RegExp(`emit\\(\\s*${quoted('link.created')}`))).toHaveLength(1);
  });

  it('keeps every reserved error code in the catalogue, as the spec lists it, and no live code raises one', () => {
    for (const [code, entry] of Object.entries(RESERVED_ERRORS)) {
      expect(ERROR_CATALOGUE[code as keyof typeof ERROR_CATALOGUE]).toBe(entry);
    }
    for (const code of Object.keys(RESERVED_ERRORS)) {
      // Thrown (AppError, retryLater), declared as a route's possible answer (`errors: [...]`), or answered as a code.
      const raised = new RegExp(`(?:AppError|retryLater)\\(\\s*${quoted(code)}|errors:\\s*\\[[^\\]]*${quoted(code)}|code:\\s*${quoted(code)}`);
      expect(matchesIn(sources, raised), code).toEqual([]);
    }
  });

  it('leaves no code of the catalogue that live code never names unreserved', () => {
    for (const code of ERROR_CODES.filter((code) => !(code in RESERVED_ERRORS))) {
      const named = matchesIn(sources, new RegExp(quoted(code)));
      expect(named.length, `${code} is named by no live source: reserve it in shared/reserved.ts`).toBeGreaterThan(0);
    }
  });

  it('gives AppError and the event bus live names only: a reserved one does not type-check (tsc runs over this file)', () => {
    const refuse = (bus: EventBus): unknown[] => [
      // @ts-expect-error a reserved code is not a code AppError takes
      new AppError('section_locked'),
      // @ts-expect-error a reserved event is not one the bus emits
      bus.emit('agent.task', { ownerId: 'o', subdomain: null }, {}),
    ];
    expect(refuse).toBeTypeOf('function');
    const live: LiveErrorCode = 'not_implemented';
    expect(new AppError(live).status).toBe(501);
  });

  it('accepts subscriptions to the reserved events and no live code emits them', () => {
    expect(EVENT_TYPES).toEqual([...LIVE_EVENT_TYPES, ...RESERVED_EVENT_TYPES]);
    for (const type of RESERVED_EVENT_TYPES) {
      // emit('type', …) or a draft `{ type: 'type', … }` for emitMany.
      const emitted = new RegExp(`emit\\(\\s*${quoted(type)}|type:\\s*${quoted(type)}`);
      expect(matchesIn(sources, emitted), type).toEqual([]);
    }
  });

  it('applies the reserved rate buckets to the reserved routes only', () => {
    for (const [bucket, entry] of Object.entries(RESERVED_RATE_BUCKETS)) {
      expect(RATE_BUCKETS[bucket as keyof typeof RATE_BUCKETS]).toBe(entry);
      expect(matchesIn(sources, new RegExp(`bucket:\\s*${quoted(bucket)}`)), bucket).toEqual([]);
    }
    for (const route of RESERVED_ROUTES) expect(Object.keys(RESERVED_RATE_BUCKETS)).toContain(route.bucket);
  });

  it('lets tokens hold the reserved scopes, and no route requires one', () => {
    for (const scope of RESERVED_SCOPES) {
      expect(SCOPES).toContain(scope);
      expect(matchesIn(sources, new RegExp(`scope:\\s*${quoted(scope)}`)), scope).toEqual([]);
    }
  });
});
