// The run's verdict: each scenario's thresholds, the visits stored against the answers that
// promised them, and one summary table.
import { pad } from '#bench/lib/load.js';
import type { ScenarioResult } from './scenarios/result.js';
import type { Settings } from './settings.js';

/** Visits one scenario's answers promise, and what the owners' statistics count once drained. */
export interface Count {
  answered: number;
  /** The report's totals (rollups) and the visit list's total (rows, one per visit). */
  stored: { rollups: number; rows: number };
}

/** Why a scenario fails its thresholds (none: it passes). */
export function thresholdFailures(result: ScenarioResult, settings: Settings): string[] {
  const failures: string[] = [];
  if (result.requests === 0) failures.push('no answer at all');
  const errors = result.transportErrors + result.checks.failures;
  const errorRate = errors / Math.max(1, result.requests + result.transportErrors);
  if (errorRate > settings.maxErrorRate) {
    const which = [...result.checks.failed].map(([check, count]) => `${check} failed ${count}×`);
    if (result.transportErrors > 0) which.push(`${result.transportErrors} without an answer`);
    failures.push(`errors ${(errorRate * 100).toFixed(2)} % > ${(settings.maxErrorRate * 100).toFixed(2)} % (${which.join('; ')})`);
  }
  const limit = result.p99LimitMs * settings.p99Factor;
  if (!(result.p99Ms <= limit)) failures.push(`p99 ${result.p99Ms} ms > ${limit} ms`);
  return failures;
}

/** Why a count is wrong (none: every visit answered is stored, once). */
export function countFailures(count: Count): string[] {
  const { answered, stored } = count;
  if (stored.rows === answered && stored.rollups === answered) return [];
  return [`${answered} answered, ${stored.rows} stored (visit list), ${stored.rollups} counted (report)`];
}

const thousands = (value: number) => (Number.isFinite(value) ? Math.round(value).toLocaleString('en-US').replace(/,/g, ' ') : '-');

/** Requests per second: a decimal below 10 (the exports come a few a second at most). */
const rate = (value: number) => (value < 10 ? value.toFixed(1) : thousands(value));

/** The summary table: one row a scenario. */
export function summaryTable(rows: { result: ScenarioResult; failures: string[]; count?: Count }[], settings: Settings): string {
  const header = [
    'scenario'.padEnd(32),
    pad('requests', 10),
    pad('req/s', 9),
    pad('p50 ms', 8),
    pad('p99 ms', 8),
    pad('p99 ≤', 9),
    pad('errors', 7),
    '  thresholds',
    '  stored / answered',
  ];
  const lines = [header.join('')];
  for (const { result, failures, count } of rows) {
    const errors = result.transportErrors + result.checks.failures;
    const stored = count ? `${thousands(count.stored.rows)} / ${thousands(count.answered)} ${countFailures(count).length === 0 ? 'equal' : 'DIFFER'}` : '-';
    lines.push(
      [
        result.name.padEnd(32),
        pad(thousands(result.requests), 10),
        pad(rate(result.requests / result.seconds), 9),
        pad(thousands(result.p50Ms), 8),
        pad(thousands(result.p99Ms), 8),
        pad(thousands(result.p99LimitMs * settings.p99Factor), 9),
        pad(String(errors), 7),
        `  ${(failures.length === 0 ? 'pass' : 'FAIL').padEnd(10)}`,
        `  ${stored}`,
      ].join(''),
    );
  }
  return lines.join('\n');
}
