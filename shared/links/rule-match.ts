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
  const match = /^\s*([A-Za-z]{2,3})\b/.exec(header);
  return match ? match[1]!.toLowerCase() : '';
}

const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/** A parameter of a raw query by name (and value), decoded; one pass over the text, no URLSearchParams (the hot path). */
function hasParam(query: string, name: string, value: string | undefined): boolean {
  for (const part of query.split('&')) {
    const eq = part.indexOf('=');
    if (nameOf(part) !== name) continue;
    if (value === undefined) return true;
    try {
      if (eq >= 0 && decodeURIComponent(part.slice(eq + 1).replace(/\+/g, ' ')) === value) return true;
    } catch {
      continue;
    }
  }
  return false;
}

/** A condition's values in lower case, made once per cached link (keyed by the values array it holds). */
const lowered = new WeakMap<string[], Set<string>>();
function listed(list: string[], value: string): boolean {
  if (value === '') return false;
  let set = lowered.get(list);
  if (!set) lowered.set(list, (set = new Set(list.map((item) => item.toLowerCase()))));
  return set.has(value.toLowerCase());
}

/** Whether a request's facts meet a rule's condition: the one test the edge and the dashboard's preview share. */
export function matches(condition: MatchCondition, facts: RuleFacts): boolean {
  switch (condition.type) {
    case 'device': {
      const device = facts.device();
      return listed(condition.values, device === '' ? 'desktop' : device);
    }
    case 'os':
      return listed(condition.values, facts.os());
    case 'browser':
      return listed(condition.values, facts.browser());
    case 'country':
      return listed(condition.values, facts.country());
    case 'language':
      return listed(condition.values, facts.language());
    case 'time': {
      const date = new Date(facts.at);
      if (condition.days && !condition.days.includes(date.getUTCDay())) return false;
      const now = date.getUTCHours() * 60 + date.getUTCMinutes();
      const [from, to] = [minutesOf(condition.from), minutesOf(condition.to)];
      return from < to ? now >= from && now < to : now >= from || now < to;
    }
    case 'query':
      return facts.query !== '' && hasParam(facts.query, condition.name, condition.value);
  }
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

/** The index of the first rule whose condition the facts meet, or -1. */
export function firstMatchingRule(rules: readonly { condition: MatchCondition }[], facts: RuleFacts): number {
  return rules.findIndex((candidate) => matches(candidate.condition, facts));
}
