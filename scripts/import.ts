// Imports another shortener's links (and visits) into a subdomain through the platform's import API (issue 39):
//   npm run import -- --from <bitly|dub|shlink|yourls> --file <path> --subdomain <name> [--dry-run] [--no-history]
//   npm run import -- --from <shlink-api|kutt> --source-url <URL> --api-key <key> --subdomain <name> …
//   npm run import -- --from yourls-api --source-url <URL> (--signature <token> | --username <name> --password <pw>) …
// (the credentials also from IMPORT_API_KEY, IMPORT_SIGNATURE, IMPORT_PASSWORD: a flag shows in the process list)
// (in the image: node dist/scripts/import.js …). A client of POST /api/v1/imports and GET
// /api/v1/imports/{id}, as any integration is: the base URL and an API token with links:write and
// links:read come from --url and --token, or LINKTRACK_URL and LINKTRACK_TOKEN (better: a flag shows
// in the process list). Prints progress on stderr while the job runs, then the report on stdout: the
// counts per status and every row that was not imported (conflicts, refusals, unreadable rows).
// Exit codes: 0 completed, 1 refused or failed (the message says why), 2 usage.
// docs/importers.md, "The command line".
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';

const USAGE =
  'usage: npm run import -- --from <bitly|dub|shlink|yourls> --file <path> --subdomain <name> [--dry-run] [--no-history] [--url <base URL>] [--token <API token>]\n' +
  '       npm run import -- --from <shlink-api|kutt> --source-url <URL> --api-key <key> --subdomain <name> [--dry-run] [--no-history] …\n' +
  '       npm run import -- --from yourls-api --source-url <URL> (--signature <token> | --username <name> --password <password>) --subdomain <name> …\n' +
  '  --url and --token default to LINKTRACK_URL and LINKTRACK_TOKEN (a token with links:write and links:read);\n' +
  '  --api-key, --signature and --password to IMPORT_API_KEY, IMPORT_SIGNATURE and IMPORT_PASSWORD (a flag shows in the process list)\n';
/** The sources read through their API; the others are read from a file (a CSV export, or YOURLS's database export). */
const API_SOURCES = ['shlink-api', 'kutt', 'yourls-api'];
/** Sources with a visit history (`--no-history` leaves it out). */
const HISTORY_SOURCES = ['shlink-api', 'kutt', 'yourls'];
/** How often the import is polled while it runs. */
const POLL_MS = Number(process.env.LINKTRACK_IMPORT_POLL_MS ?? 500);
/** Statuses of rows that did not come in: listed in the report. */
const PROBLEMS = ['conflict', 'refused', 'unreadable'] as const;
/** Report rows one request reads (the API's most). */
const PAGE = 1_000;

function usage(message: string): never {
  process.stderr.write(`${message}\n${USAGE}`);
  process.exit(2);
}

function fail(message: string): never {
  process.stderr.write(`import failed: ${message}\n`);
  process.exit(1);
}

let args: ReturnType<typeof parse>;
function parse() {
  return parseArgs({
    options: {
      from: { type: 'string' },
      file: { type: 'string' },
      subdomain: { type: 'string' },
      'dry-run': { type: 'boolean', default: false },
      url: { type: 'string' },
      token: { type: 'string' },
      'source-url': { type: 'string' },
      'api-key': { type: 'string' },
      signature: { type: 'string' },
      username: { type: 'string' },
      password: { type: 'string' },
      'no-history': { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  }).values;
}
try {
  args = parse();
} catch (error) {
  usage((error as Error).message);
}
if (args.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const source = args.from ?? usage('--from is required');
// Any other name is sent with its file: the API names the sources it knows when it refuses one.
const fromFile = !API_SOURCES.includes(source);
const path = fromFile ? (args.file ?? usage('--file is required')) : '';
/** The source's part of the request: its file, or its URL and credential. */
const sourceFields = (): Record<string, unknown> => {
  if (fromFile) return {};
  const url = args['source-url'] ?? usage(`--source-url is required with --from ${source}`);
  if (source !== 'yourls-api') return { url, api_key: args['api-key'] || process.env.IMPORT_API_KEY || usage('--api-key or IMPORT_API_KEY is required') };
  const signature = args.signature || process.env.IMPORT_SIGNATURE;
  if (signature) return { url, signature };
  return {
    url,
    username: args.username ?? usage('--signature (or IMPORT_SIGNATURE), or --username and --password, is required'),
    password: args.password || process.env.IMPORT_PASSWORD || usage('--password or IMPORT_PASSWORD is required'),
  };
};
const fields = sourceFields();
const subdomain = args.subdomain ?? usage('--subdomain is required');
const base = (args.url || process.env.LINKTRACK_URL || usage('--url or LINKTRACK_URL is required')).replace(/\/+$/, '');
const token = args.token || process.env.LINKTRACK_TOKEN || usage('--token or LINKTRACK_TOKEN is required');

/** An import as GET /api/v1/imports/{id} answers it (the fields read here), with a page of its report. */
interface ImportState {
  id: string;
  source: string;
  dry_run: boolean;
  status: 'queued' | 'running' | 'completed' | 'failed';
  error: { code: string; details: Record<string, unknown> } | null;
  file_bytes: number;
  rows_total: number | null;
  rows_read: number;
  counts: Record<string, number>;
  /** Visits of a source with history (null for a CSV export). */
  visits?: { added: number; existing: number; skipped: number } | null;
  rows?: { line: number; status: string; slug: string | null; reason: string | null }[];
  next_rows_after?: number | null;
}

interface Envelope {
  data?: ImportState;
  error?: { code: string; message: string; details?: unknown };
}

/** One API call: the envelope of a success, or exit 1 naming the error (its code, message and details). */
async function api(method: 'GET' | 'POST', pathname: string, body?: unknown): Promise<ImportState> {
  let response: Response;
  try {
    response = await fetch(`${base}${pathname}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(60_000),
    });
  } catch (error) {
    fail(`${method} ${base}${pathname}: ${(error as Error).cause instanceof Error ? ((error as Error).cause as Error).message : (error as Error).message}`);
  }
  const text = await response.text();
  let envelope: Envelope;
  try {
    envelope = JSON.parse(text) as Envelope;
  } catch {
    fail(`${method} ${pathname}: HTTP ${response.status}, not the API's JSON: ${text.slice(0, 200)}`);
  }
  if (!response.ok || !envelope.data) {
    const error = envelope.error;
    fail(`HTTP ${response.status} ${error?.code ?? ''}: ${error?.message ?? text.slice(0, 200)}${error?.details ? ` ${JSON.stringify(error.details)}` : ''}`);
  }
  return envelope.data;
}

const countsOf = (counts: Record<string, number>) =>
  Object.entries(counts)
    .filter(([, count]) => count > 0)
    .map(([status, count]) => `${status} ${count}`)
    .join(', ') || 'no rows';
const visitsOf = (visits: ImportState['visits']) =>
  visits ? `; visits: added ${visits.added}, existing ${visits.existing}${visits.skipped ? `, skipped ${visits.skipped}` : ''}` : '';

if (fromFile) {
  try {
    fields.file = await readFile(path, 'utf8');
  } catch (error) {
    fail(`cannot read ${path}: ${(error as Error).message}`);
  }
}
const history = HISTORY_SOURCES.includes(source) ? { history: !args['no-history'] } : {};

const started = await api('POST', '/api/v1/imports', { source, subdomain, dry_run: args['dry-run'], ...fields, ...history });
const { id } = started;
const what = fromFile ? `${started.file_bytes} bytes of ${source}` : `${source} at ${String(fields.url)}`;
process.stderr.write(`import ${id}: ${what} into ${subdomain}${started.dry_run ? ' (dry run)' : ''}, queued\n`);
// Interrupted here, the import goes on on the platform: say where to find it.
process.once('SIGINT', () => {
  process.stderr.write(`\nstopped watching; the import goes on: GET ${base}/api/v1/imports/${id}\n`);
  process.exit(130);
});

let state: ImportState;
let shown = '';
for (;;) {
  state = await api('GET', `/api/v1/imports/${id}?rows_limit=0`);
  const line = `${state.status} ${state.rows_read}/${state.rows_total ?? '?'} rows (${countsOf(state.counts)})${visitsOf(state.visits)}`;
  if (line !== shown) process.stderr.write(`import ${id}: ${line}\n`);
  shown = line;
  if (state.status === 'completed' || state.status === 'failed') break;
  await sleep(POLL_MS);
}
if (state.status === 'failed') fail(`${state.error?.code ?? 'unknown'} ${JSON.stringify(state.error?.details ?? {})} (import ${id})`);

const out: string[] = [
  `import ${id} of ${source} into ${subdomain}${state.dry_run ? ' (dry run: nothing written)' : ''} completed: ${state.rows_total} rows, ${countsOf(state.counts)}${visitsOf(state.visits)}`,
];
for (const status of PROBLEMS) {
  if (!state.counts[status]) continue;
  for (let after = 0; ;) {
    const page = await api('GET', `/api/v1/imports/${id}?rows_status=${status}&rows_limit=${PAGE}&rows_after=${after}`);
    for (const row of page.rows ?? []) {
      out.push(`line ${row.line}: ${row.status}${row.slug ? ` ${row.slug}` : ''}${row.reason ? ` (${row.reason})` : ''}`);
    }
    if (page.next_rows_after === null || page.next_rows_after === undefined) break;
    after = page.next_rows_after;
  }
}
process.stdout.write(`${out.join('\n')}\n`);
