// The part of redirect rules that runs anywhere: matching a condition against a request's facts and
// merging a visitor's query into a target. The edge (shared/links/rules.ts) and the dashboard's
// preview of the link form use this one module, so the preview says what the edge does. No Node
// module is imported here: it is bundled into the dashboard.
/** A rule's condition as rules.ts's schema writes it (declared here, so that this module imports nothing). */
export type MatchCondition =
  | { type: 'device'; values: string[] }
  | { type: 'os' | 'browser' | 'country' | 'language'; values: string[] }
  | { type: 'time'; from: string; to: string; days?: number[] | undefined }
  | { type: 'query'; name: string; value?: string | undefined };

/** The facts of a request a condition reads; the edge works each out lazily, the preview has them as picked. */
export interface RuleFacts {
  /** Device type as ua-parser-js gives it (`mobile`, `tablet`; '' for none, which counts as desktop). */
  device(): string;
  os(): string;
  browser(): string;
  /** ISO alpha-2 of the visitor's address, '' when unknown. */
  country(): string;
  /** The first language of Accept-Language, lower case, without region. */
  language(): string;
  /** The request's time, ms since the epoch. */
  readonly at: number;
  /** The short URL's raw query, without `?`. */
  readonly query: string;
}

/** The first language of an Accept-Language header, lower case, without its region (`de-CH;q=0.9` → `de`). */
export function firstLanguage(header: string): string {
  let start = 0;
  while (start < header.length && /\s/.test(header[start]!)) start++;
  let end = start;
  while (end < header.length && end - start < 4 && isLetter(header.charCodeAt(end))) end++;
  // Two or three letters, then the end or a character that is no letter, digit or underscore (`de-CH`, `fr;q=0.8`, `es,`).
  if (end - start < 2 || end - start > 3) return '';
  const next = header.charCodeAt(end);
  if (end < header.length && (isLetter(next) || (next >= 48 && next <= 57) || next === 95)) return '';
  return header.slice(start, end).toLowerCase();
}

const isLetter = (code: number) => (code >= 65 && code <= 90) || (code >= 97 && code <= 122);

const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/**
 * A parameter of a raw query by name (and value), decoded; one pass over the text with no array and,
 * for a name written plainly (no `%` or `+`), no slice of it (the hot path: a matched query rule).
 */
function hasParam(query: string, name: string, value: string | undefined): boolean {
  for (let start = 0; start <= query.length;) {
    let end = query.indexOf('&', start);
    if (end < 0) end = query.length;
    let eq = query.indexOf('=', start);
    if (eq < 0 || eq > end) eq = -1;
    const nameEnd = eq < 0 ? end : eq;
    const plain = nameEnd - start === name.length && query.startsWith(name, start);
    if (plain || (encoded(query, start, nameEnd) && nameOf(query.slice(start, nameEnd)) === name)) {
      if (value === undefined) return true;
      try {
        // `go` without `=` is `go` with the empty value, as URLSearchParams reads it.
        if ((eq < 0 ? '' : decodeURIComponent(query.slice(eq + 1, end).replace(/\+/g, ' '))) === value) return true;
      } catch {
        // A value that does not decode matches nothing.
      }
    }
    start = end + 1;
  }
  return false;
}

/** Whether part of a query holds a `%` or a `+` (an encoded character or a space). */
function encoded(text: string, start: number, end: number): boolean {
  for (let index = start; index < end; index++) {
    const code = text.charCodeAt(index);
    if (code === 37 || code === 43) return true;
  }
  return false;
}

/** A rule's test, made once per condition: its values lowered into a set, its times in minutes. */
type Matcher = (facts: RuleFacts) => boolean;

/** A value in a list of lowered values ('' is never listed). */
const inSet = (set: ReadonlySet<string>, value: string) => value !== '' && set.has(value.toLowerCase());

/** The test of a condition: what `matches` runs, and what the edge keeps per cached link's rules. */
function compile(condition: MatchCondition): Matcher {
  switch (condition.type) {
    case 'time': {
      const [from, to, days] = [minutesOf(condition.from), minutesOf(condition.to), condition.days];
      return (facts) => {
        const date = new Date(facts.at);
        if (days && !days.includes(date.getUTCDay())) return false;
        const now = date.getUTCHours() * 60 + date.getUTCMinutes();
        return from < to ? now >= from && now < to : now >= from || now < to;
      };
    }
    case 'query': {
      const { name, value } = condition;
      return (facts) => facts.query !== '' && hasParam(facts.query, name, value);
    }
    default: {
      const set = new Set(condition.values.map((item) => item.toLowerCase()));
      switch (condition.type) {
        case 'device':
          return (facts) => inSet(set, facts.device() || 'desktop');
        case 'os':
          return (facts) => inSet(set, facts.os());
        case 'browser':
          return (facts) => inSet(set, facts.browser());
        case 'country':
          return (facts) => inSet(set, facts.country());
        case 'language':
          return (facts) => inSet(set, facts.language());
      }
    }
  }
}

/** Whether a request's facts meet a rule's condition: the one test the edge and the dashboard's preview share. */
export function matches(condition: MatchCondition, facts: RuleFacts): boolean {
  return compile(condition)(facts);
}

/** A query part's name, decoded; undefined when it does not decode. */
function nameOf(part: string): string | undefined {
  const eq = part.indexOf('=');
  const raw = eq < 0 ? part : part.slice(0, eq);
  // Most names hold nothing to decode: no regular expression and no decoding for them (the hot path).
  if (!raw.includes('%') && !raw.includes('+')) return raw;
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
}

/**
 * The visitor's query merged into the target's, as Shlink and Dub do: on a clash the visitor's
 * parameter wins (the target's of that name is dropped), the rest of the target's query is kept in
 * its order and the visitor's parameters follow; `lt_visit` and undecodable names never pass.
 */
export function forwardQuery(target: string, query: string): string {
  if (!query) return target;
  const added: string[] = [];
  const names = new Set<string>();
  for (const part of query.split('&')) {
    const name = part ? nameOf(part) : undefined;
    if (name === undefined || name === 'lt_visit') continue;
    added.push(part);
    names.add(name);
  }
  if (added.length === 0) return target;
  const hash = target.indexOf('#');
  const base = hash < 0 ? target : target.slice(0, hash);
  const queryAt = base.indexOf('?');
  const kept =
    queryAt < 0
      ? []
      : base
          .slice(queryAt + 1)
          .split('&')
          .filter((part) => part && !names.has(nameOf(part) ?? ''));
  return `${queryAt < 0 ? base : base.slice(0, queryAt)}?${[...kept, ...added].join('&')}${hash < 0 ? '' : target.slice(hash)}`;
}

/**
 * The tests of a list of rules, made on its first evaluation and kept while the list lives (the
 * edge's cached link holds it): a request then runs closures over lowered sets, with no parsing,
 * lowering of the rules' values or look-up per condition.
 */
const compiled = new WeakMap<readonly { condition: MatchCondition }[], Matcher[]>();

/** The index of the first rule whose condition the facts meet, or -1. */
export function firstMatchingRule(rules: readonly { condition: MatchCondition }[], facts: RuleFacts): number {
  let tests = compiled.get(rules);
  if (!tests) compiled.set(rules, (tests = rules.map((rule) => compile(rule.condition))));
  for (let index = 0; index < tests.length; index++) if (tests[index]!(facts)) return index;
  return -1;
}
