// The scripted tour of `make contract` with openapi-fetch over the types openapi-typescript generated
// from the running platform's document (run.sh): sign in, a token, a subdomain, a link created, read,
// listed, changed and deleted, its statistics, a webhook and its delivery log, exports. The types are
// checked at compile time (tsc, strict): `meta.next_cursor` of a list is `string | null`, and an error
// is the JSON envelope, its `code` readable without narrowing away an HTML string.
//
//   tsx --tsconfig contract/clients/tsconfig.json contract/clients/tour.ts <base URL> <e-mail> <password>
import { randomBytes } from 'node:crypto';
import createClient from 'openapi-fetch';
import type { components, paths } from 'contract-api';

/** True when A and B are the same type (not merely assignable). */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type ListMeta = paths['/api/v1/links']['get']['responses'][200]['content']['application/json']['meta'];
// Each fails to compile unless the document types them so.
const nextCursorIsStringOrNull: Equal<ListMeta['next_cursor'], string | null> = true;
const pageMetaIsTyped: Equal<components['schemas']['PageMeta']['has_more'], boolean> = true;
type LinkError = paths['/api/v1/links/{id}']['get']['responses'][404]['content'];
const errorsAreJsonOnly: Equal<keyof LinkError, 'application/json'> = true;

function check(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Error(`TypeScript client tour: ${what}`);
}

/** The body of an answer of the expected status. */
function ok<T>(result: { data?: T; error?: unknown; response: Response }, status: number, what: string): T {
  check(
    result.response.status === status && result.data !== undefined,
    `${what}: HTTP ${result.response.status}, expected ${status}: ${JSON.stringify(result.error)}`,
  );
  return result.data;
}

const [base, email, password] = process.argv.slice(2) as [string, string, string];
check(nextCursorIsStringOrNull && pageMetaIsTyped && errorsAreJsonOnly, 'the generated types');

// Sign in: the session cookie, sent back by hand (fetch keeps no cookie jar), with the Origin writes need.
const anonymous = createClient<paths>({ baseUrl: base });
const login = await anonymous.POST('/auth/login', { body: { email, password } });
ok(login, 200, 'sign in');
const cookie = login.response.headers
  .getSetCookie()
  .map((header) => header.split(';')[0])
  .join('; ');
const session = createClient<paths>({ baseUrl: base, headers: { cookie, origin: base } });
const minted = ok(
  await session.POST('/api/v1/tokens', { body: { name: 'TypeScript client tour', scopes: ['links:read', 'links:write', 'stats:read', 'subdomain:write'] } }),
  201,
  'create a token',
).data;
check(minted.token.startsWith('svc_u_'), "the token's secret");
const api = createClient<paths>({ baseUrl: base, headers: { authorization: `Bearer ${minted.token}` } });

const name = `ts-tour-${randomBytes(4).toString('hex')}`;
ok(await api.POST('/api/v1/subdomains', { body: { name } }), 201, 'claim a subdomain');

// Links: create, read, list (typed page meta), change, delete; the deleted link's error read without narrowing.
const link = ok(await api.POST('/api/v1/links', { body: { subdomain: name, target_url: 'https://example.com/typescript' } }), 201, 'create a link').data;
ok(await api.POST('/api/v1/links', { body: { subdomain: name, target_url: 'https://example.com/typescript/2' } }), 201, 'create a second link');
const read = ok(await api.GET('/api/v1/links/{id}', { params: { path: { id: link.id } } }), 200, 'read the link').data;
check(read.target_url === 'https://example.com/typescript', 'the link read');
const first = ok(await api.GET('/api/v1/links', { params: { query: { subdomain: name, limit: 1 } } }), 200, 'list links');
const next: string | null = first.meta.next_cursor;
check(
  first.meta.count === 1 && first.meta.total === 2 && first.meta.has_more && typeof next === 'string',
  `the first page's meta: ${JSON.stringify(first.meta)}`,
);
const last = ok(await api.GET('/api/v1/links', { params: { query: { subdomain: name, limit: 1, cursor: next } } }), 200, 'list the next page');
check(last.meta.next_cursor === null && !last.meta.has_more, 'the last page has no next cursor');
const changed = ok(
  await api.PATCH('/api/v1/links/{id}', { params: { path: { id: link.id } }, body: { title: 'Changed by the TypeScript client' } }),
  200,
  'change the link',
).data;
check(changed.title === 'Changed by the TypeScript client', 'the changed title');
ok(await api.DELETE('/api/v1/links/{id}', { params: { path: { id: link.id } } }), 200, 'delete the link');
const gone = await api.GET('/api/v1/links/{id}', { params: { path: { id: link.id } } });
check(gone.response.status === 404 && gone.error?.error.code === 'not_found', "the deleted link's 404");

// Statistics in a time zone of the TimeZone enum.
const report = ok(
  await api.GET('/api/v1/stats/{scope}/{id}', { params: { path: { scope: 'subdomain', id: name }, query: { tz: 'Asia/Kolkata' } } }),
  200,
  "the subdomain's report",
).data;
check(report.range.tz === 'Asia/Kolkata', `the report's time zone: ${report.range.tz}`);

// A webhook, its test delivery and the delivery log (ids are strings, as documented).
const webhook = ok(
  await api.POST('/api/v1/webhooks', { body: { url: 'https://hooks.invalid/typescript-tour', events: ['link.created'] } }),
  201,
  'create a webhook',
).data;
ok(await api.POST('/api/v1/webhooks/{id}/test', { params: { path: { id: webhook.id } } }), 200, 'test the webhook');
const log = ok(await api.GET('/api/v1/webhooks/{id}/deliveries', { params: { path: { id: webhook.id } } }), 200, 'the delivery log');
check(log.data.deliveries.length === 1 && typeof log.data.deliveries[0]?.id === 'string', "the delivery log's ids are strings");
ok(await api.DELETE('/api/v1/webhooks/{id}', { params: { path: { id: webhook.id } } }), 200, 'delete the webhook');

// Exports: CSV (text, a header row) and JSON (the envelope).
const csv = ok(await api.GET('/api/v1/export', { params: { query: { format: 'csv', subdomain: name } }, parseAs: 'text' }), 200, 'export CSV');
check(csv.split('\n')[0]!.includes(','), `the CSV's header row: ${csv.slice(0, 200)}`);
const exported = ok(await api.GET('/api/v1/export', { params: { query: { format: 'json', subdomain: name } } }), 200, 'export JSON');
// One operation answers four content types: the type is their union, the JSON envelope among them.
check(typeof exported === 'object' && exported.ok && Array.isArray(exported.data.visits), 'the JSON export');

ok(await session.DELETE('/api/v1/tokens/{id}', { params: { path: { id: minted.id } } }), 200, 'revoke the token');
process.stdout.write('TypeScript client tour: sign in, token, subdomain, links CRUD, stats, webhook, export: ok\n');
