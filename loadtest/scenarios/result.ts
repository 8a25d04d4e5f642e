// What a scenario hands to the summary: its figures, its checks, its p99 bound, and the visits its
// answers promise (compared with what the owners' statistics count once the pipeline drained).
import type { Checks, LoadResult } from '../load.js';

/** Where the visits of a scenario are stored: subdomains, each read with its owner's token. */
export interface StoredWhere {
  token: string;
  subdomain: string;
}

export interface ScenarioResult {
  name: string;
  /** Answers received (for the export: exports pulled). */
  requests: number;
  seconds: number;
  p50Ms: number;
  p99Ms: number;
  /** The p99 bound before LOADTEST_P99_FACTOR. */
  p99LimitMs: number;
  /** Requests that got no answer. */
  transportErrors: number;
  checks: Checks;
  /** Visits the answers promise (redirects and beacon-started visits) and where the owners read them. */
  visits?: { answered: number; where: StoredWhere[] };
  /** Figures printed under the table (export sizes, statuses seen). */
  notes: string[];
}

/** A scenario's row from one load. */
export function fromLoad(name: string, load: LoadResult, checks: Checks, p99LimitMs: number, extra: Partial<ScenarioResult> = {}): ScenarioResult {
  return {
    name,
    requests: load.requests,
    seconds: load.seconds,
    p50Ms: load.p50,
    p99Ms: load.p99,
    p99LimitMs,
    transportErrors: load.transportErrors,
    checks,
    notes: [
      `${name}: statuses ${
        Object.entries(load.statuses)
          .map(([status, count]) => `${status}×${count}`)
          .join(', ') || 'none'
      }`,
    ],
    ...extra,
  };
}

/** Answers with a 3xx status: the redirects the platform must have stored a visit for. */
export const redirectsAnswered = (load: LoadResult) =>
  Object.entries(load.statuses).reduce((sum, [status, count]) => (status.startsWith('3') ? sum + count : sum), 0);

/** A header of an autocannon answer, whatever the case the server wrote its name in. */
export function headerOf(headers: Record<string, string | string[]>, name: string): string | undefined {
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === name) return Array.isArray(value) ? value[0] : value;
  return undefined;
}
