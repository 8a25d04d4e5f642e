import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform } from './support/platform.js';
import { htmlSecurityHeaders } from '#shared/http/security-headers.js';

// Guards issue 23: API answers and HTML error pages carried no nosniff, framing or CSP header.

let platform: Awaited<ReturnType<typeof startTestPlatform>>;

beforeAll(async () => {
  platform = await startTestPlatform();
});

afterAll(async () => {
  await platform?.app.close();
});

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
const JSON_CSP = "default-src 'none'; frame-ancestors 'none'";

type Answer = { statusCode: number; headers: Record<string, unknown>; body: string };
const get = (url: string, headers: Record<string, string> = {}): Promise<Answer> =>
  platform.ingest.inject({ method: 'GET', url, headers: { host: 'localhost:8080', ...headers } });

function expectApiHeaders(answer: Answer) {
  expect(answer.headers['x-content-type-options']).toBe('nosniff');
  expect(answer.headers['x-frame-options']).toBe('DENY');
  expect(answer.headers['content-security-policy']).toBe(JSON_CSP);
}

function expectErrorPageHeaders(answer: Answer) {
  expect(answer.headers['content-type']).toMatch(/^text\/html/);
  expect(answer.headers['x-content-type-options']).toBe('nosniff');
  expect(answer.headers['x-frame-options']).toBe('DENY');
  const csp = String(answer.headers['content-security-policy']);
  expect(csp).toContain("default-src 'none'");
  expect(csp).toContain("script-src 'none'");
  expect(csp).toContain("frame-ancestors 'none'");
  // The page's one inline stylesheet is admitted by its hash, and nothing else inline.
  const style = /<style>([^<]*)<\/style>/.exec(answer.body)![1]!;
  expect(csp).toContain(`'sha256-${createHash('sha256').update(style).digest('base64')}'`);
}

describe('API answers', () => {
  it('a JSON success carries nosniff, DENY framing and a CSP that allows nothing', async () => {
    const answer = await get('/api/v1/status');
    expect(answer.statusCode).toBe(200);
    expectApiHeaders(answer);
  });

  it('a JSON failure carries them too, on the API and on a short host', async () => {
    expectApiHeaders(await get('/api/v1/nowhere'));
    expectApiHeaders(await get('/no-such-slug', { host: `${platform.subdomain}.localhost:8080` }));
    expectApiHeaders(await get('/tracker/collect?v=1'));
  });

  it("a redirect carries them, written by the short hosts' listener as by the edge app", async () => {
    const created = await platform.app.inject({
      method: 'POST',
      url: '/api/v1/links',
      headers: platform.owner.auth,
      payload: { subdomain: platform.subdomain, target_url: 'https://example.com/' },
    });
    const redirect = await get(`/${created.json().data.slug}`, { host: `${platform.subdomain}.localhost:8080` });
    expect(redirect.statusCode).toBe(302);
    expectApiHeaders(redirect);
  });

  it('the tracker script and the OpenAPI document carry them', async () => {
    expectApiHeaders(await get('/tracker.js'));
    expectApiHeaders(await get('/api/v1/openapi.json'));
  });
});

describe('HTML error pages', () => {
  it('the API and a short host render theirs with a CSP that admits only their style', async () => {
    const api = await get('/nowhere', { accept: BROWSER_ACCEPT });
    expect(api.statusCode).toBe(404);
    expectErrorPageHeaders(api);
    const short = await get('/no-such-slug', { accept: BROWSER_ACCEPT, host: `${platform.subdomain}.localhost:8080` });
    expect(short.statusCode).toBe(404);
    expectErrorPageHeaders(short);
  });
});

describe('pages with a policy of their own keep it', () => {
  it("the dashboard's CSP is its own (scripts from the platform)", async () => {
    const answer = await get('/', { accept: BROWSER_ACCEPT });
    expect(answer.headers['content-security-policy']).toBe(htmlSecurityHeaders({ frameAncestors: "'none'" })['Content-Security-Policy']);
    expect(answer.headers['x-frame-options']).toBe('DENY');
  });

  it('the public page of a subdomain may still be framed', async () => {
    const answer = await get('/', { accept: BROWSER_ACCEPT, host: `${platform.subdomain}.localhost:8080` });
    expect(answer.statusCode).toBe(200);
    expect(String(answer.headers['content-security-policy'])).toContain('frame-ancestors *');
    expect(answer.headers['x-frame-options']).toBeUndefined();
    expect(answer.headers['x-content-type-options']).toBe('nosniff');
  });
});
