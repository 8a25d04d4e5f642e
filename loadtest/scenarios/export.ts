// An owner pulls CSV exports of all their visits, one after another, while redirects load a
// subdomain of theirs: the export streams from ClickHouse as the enricher writes into it.
import { quantile } from '#bench/lib/load.js';
import { client } from '#tests/support/platform-process.js';
import { Checks, runLoad } from '../load.js';
import type { Link, Owner } from '../seed.js';
import type { Settings } from '../settings.js';
import { fromLoad, redirectsAnswered, type ScenarioResult } from './result.js';
import { redirectRequests, storedWhere } from './redirects.js';

/** Seconds one export may take before it counts as failed. */
const EXPORT_TIMEOUT_S = 600;
const NEWLINE = 0x0a;

interface Pulled {
  ms: number;
  rows: number;
  bytes: number;
  announced: number;
}

/** One CSV export of all the owner's visits, counted as it streams (rows by newlines: the load's visits hold none inside a field). */
async function pullExport(base: string, owner: Owner, checks: Checks): Promise<Pulled | undefined> {
  const auth = { authorization: `Bearer ${owner.token}` };
  // Every visit stored before the export starts is in it (oldest first, up to the newest stored).
  const before = await client(base)('GET', '/api/v1/visits?limit=1', undefined, auth);
  if (before.status !== 200) throw new Error(`visit list: ${before.status} ${JSON.stringify(before.json)}`);
  const started = performance.now();
  const response = await fetch(`${base}/api/v1/export?format=csv`, { headers: auth, signal: AbortSignal.timeout(EXPORT_TIMEOUT_S * 1000) });
  checks.expect('export answers 200', response.status === 200);
  checks.expect('export is CSV', (response.headers.get('content-type') ?? '').startsWith('text/csv'));
  if (response.status !== 200 || !response.body) {
    await response.body?.cancel();
    return undefined;
  }
  let newlines = 0;
  let bytes = 0;
  let head = '';
  try {
    const reader = response.body.getReader();
    for (let next = await reader.read(); !next.done; next = await reader.read()) {
      const data = Buffer.from(next.value.buffer, next.value.byteOffset, next.value.byteLength);
      if (head.length < 200) head += data.subarray(0, 200).toString('utf8');
      bytes += data.length;
      for (let at = data.indexOf(NEWLINE); at !== -1; at = data.indexOf(NEWLINE, at + 1)) newlines += 1;
    }
  } catch (error) {
    checks.expect('export completes', false);
    console.error(`export broke off after ${bytes} bytes: ${(error as Error).message}`);
    return undefined;
  }
  const rows = Math.max(0, newlines - 1);
  checks.expect('export starts with its header row', head.split('\n', 1)[0]!.includes('visit_id'));
  checks.expect('export holds every visit stored before it', rows >= (before.json.meta.total as number));
  return { ms: performance.now() - started, rows, bytes, announced: Number(response.headers.get('x-export-rows')) };
}

export async function exportWhileRedirecting(base: string, settings: Settings, exporter: Owner, links: Link[]): Promise<[ScenarioResult, ScenarioResult]> {
  const redirectChecks = new Checks();
  const exportChecks = new Checks();
  let loading = true;
  const load = runLoad(base, {
    connections: settings.connections,
    seconds: settings.seconds,
    rate: settings.rate,
    requests: redirectRequests(links, redirectChecks),
  }).finally(() => (loading = false));
  const pulled: Pulled[] = [];
  const started = performance.now();
  // Exports back to back for as long as the redirects run (at least one).
  do {
    const one = await pullExport(base, exporter, exportChecks);
    if (one) pulled.push(one);
  } while (loading);
  const exportSeconds = (performance.now() - started) / 1000;
  const redirected = await load;

  const sorted = pulled.map((one) => one.ms).sort((a, b) => a - b);
  const largest = pulled.reduce<Pulled | undefined>((top, one) => (!top || one.rows > top.rows ? one : top), undefined);
  const exportRow: ScenarioResult = {
    name: 'CSV export (owner, all visits)',
    requests: pulled.length,
    seconds: exportSeconds,
    p50Ms: sorted.length ? Math.round(quantile(sorted, 0.5)) : NaN,
    p99Ms: sorted.length ? Math.round(quantile(sorted, 0.99)) : NaN,
    p99LimitMs: 60_000,
    transportErrors: 0,
    checks: exportChecks,
    notes: largest
      ? [
          `CSV export: ${pulled.length} pulled while redirects ran; the largest ${largest.rows} rows (X-Export-Rows announced ${largest.announced}), ` +
            `${(largest.bytes / 1e6).toFixed(1)} MB in ${(largest.ms / 1000).toFixed(1)} s (${Math.round(largest.rows / (largest.ms / 1000))} rows/s)`,
        ]
      : ['CSV export: none completed'],
  };
  const redirectRow = fromLoad('redirects during the export', redirected, redirectChecks, 100, {
    visits: { answered: redirectsAnswered(redirected), where: storedWhere(links) },
  });
  return [redirectRow, exportRow];
}
