import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { closeContext, uniqueName } from '#tests/support/context.js';
import { startDnsServer, type TestDnsServer } from '#tests/support/dns-server.js';
import type { listenerClient } from '#tests/support/listener.js';
import { claimSubdomain, createOwner, type TestOwner } from '#tests/support/owners.js';
import { startTestPlatform } from '#tests/support/platform.js';
import { createTeam, joinTeam } from '#tests/support/teams.js';
import { waitFor } from '#tests/support/wait.js';
import { postgresRepositories } from '#services/repositories.js';
import { recheckDomains } from '#services/worker/domains.js';

// Issue 40 item 1, custom domains, end to end against a DNS server started here (real UDP DNS
// packets on loopback, which DNS_RESOLVERS points the platform at): attach, TXT verification, the
// edge answering the custom host as the subdomain's own (through the server's request listener:
// Host routing, then the short-host listener), the TLS proxy's ask, re-verification with its grace
// period and notifications, detaching, and every refusal.

let dns: TestDnsServer;
let context: Context;
let app: FastifyInstance;
let ingest: ReturnType<typeof listenerClient>;
let owner: TestOwner;
let other: TestOwner;
let subdomain: string;
let slug: string;
const target = 'https://example.org/landing?from=custom';

type Json = Record<string, any>;
const api = (method: 'POST' | 'GET' | 'DELETE' | 'PATCH' | 'PUT', url: string, payload?: Json, auth: Json = owner.auth) =>
  app.inject({ method, url, headers: auth, ...(payload ? { payload } : {}) });
const at = (host: string, path: string, method: 'GET' | 'HEAD' | 'POST' = 'GET', headers: Json = {}) =>
  ingest.inject({ method, url: path, headers: { host, 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0', ...headers } });
const domainName = () => `go-${uniqueName('d').replace(/[^a-z0-9]/g, '')}.example-owner.test`;

beforeAll(async () => {
  dns = await startDnsServer();
  ({ context, app, ingest, owner, subdomain } = await startTestPlatform({ DNS_RESOLVERS: dns.address, DOMAIN_GRACE_HOURS: '72', DOMAIN_RECHECK_HOURS: '6' }));
  other = await createOwner(context, app);
  slug = `l${Math.random().toString(36).slice(2, 10)}`;
  const created = await api('POST', '/api/v1/links', { subdomain, slug, target_url: target });
  expect(created.statusCode, created.body).toBe(201);
});

afterAll(async () => {
  await app?.close();
  await closeContext(context);
  await dns?.close();
});

/** Attaches a domain to the owner's subdomain and publishes its TXT record; answers the domain as created. */
async function attach(domain = domainName(), to = subdomain, who = owner): Promise<Json> {
  const created = await api('POST', '/api/v1/domains', { domain, subdomain: to }, who.auth);
  expect(created.statusCode, created.body).toBe(201);
  return created.json().data;
}
const publish = (domain: Json) => dns.setTxt(domain.verification.name, [domain.verification.value]);
const verify = async (domain: string, who = owner) => {
  const response = await api('POST', `/api/v1/domains/${domain}/verify`, undefined, who.auth);
  expect(response.statusCode, response.body).toBe(200);
  return response.json().data as Json;
};
/** Waits until the edge answers the host (the served set is re-read on a notice, asynchronously in the services run). */
const servedAt = (host: string) => waitFor(async () => ((await at(host, `/${slug}`)).statusCode === 302 ? true : undefined), 10_000);
const notServedAt = (host: string) => waitFor(async () => ((await at(host, `/${slug}`)).statusCode !== 302 ? true : undefined), 10_000);

describe('custom domains', () => {
  it('attaches a domain (normalised), names its TXT record, and does not serve it before the record is found', async () => {
    const name = domainName();
    const created = await attach(`${name.toUpperCase()}.`);
    expect(created).toMatchObject({
      domain: name,
      subdomain,
      status: 'pending',
      served: false,
      verified_at: null,
      checked_at: null,
      verification: { type: 'TXT', name: `_linktrack-challenge.${name}` },
    });
    expect(created.verification.value).toMatch(/^linktrack-verify=[0-9a-f]{32}$/);
    expect((await api('GET', `/api/v1/domains/${name}`)).json().data).toEqual(created);

    // No record yet: still pending, with the reason; the host is no short host (what any unknown host gets).
    const missing = await verify(name);
    expect(missing).toMatchObject({ status: 'pending', served: false });
    expect(missing.check_error).toContain(`no TXT record at _linktrack-challenge.${name}`);
    expect(missing.checked_at).not.toBeNull();
    const unknown = await at('nobody-attached-this.example.net', `/${slug}`);
    const before = await at(name, `/${slug}`);
    expect(before.statusCode).toBe(unknown.statusCode);
    expect(before.headers.location).toBeUndefined();

    // Another token in the record: a mismatch, said so.
    dns.setTxt(created.verification.name, ['v=spf1 -all', 'linktrack-verify=0123456789abcdef0123456789abcdef']);
    expect((await verify(name)).check_error).toContain('holds another token');
    expect(dns.asked).toContain(created.verification.name);
  });

  it('verifies by the TXT record, then the edge answers the host exactly as the subdomain’s own: redirects, HEAD, 405, attacks, public page, tracker', async () => {
    const domain = await attach();
    // The record among others, and split in chunks as long values are.
    dns.setTxt(domain.verification.name, ['google-site-verification=abc', domain.verification.value]);
    const verified = await verify(domain.domain);
    expect(verified).toMatchObject({ status: 'verified', served: true, check_error: null, failing_since: null, serve_until: null });
    expect(verified.verified_at).not.toBeNull();
    await servedAt(domain.domain);

    const own = `${subdomain}.${context.config.baseDomain}`;
    for (const [path, method] of [
      [`/${slug}`, 'GET'],
      [`/${slug}?utm_source=newsletter`, 'GET'],
      [`/${slug.toUpperCase()}`, 'GET'],
      [`/${slug}`, 'HEAD'],
      ['/no-such-link', 'GET'],
      [`/${slug}`, 'POST'],
      ['/wp-login.php', 'GET'],
      ['/.env', 'GET'],
      ['/?q=<script>alert(1)</script>', 'GET'],
      ['/%00', 'GET'],
    ] as const) {
      const [mine, theirs] = [await at(domain.domain, path, method), await at(own, path, method)];
      expect(mine.statusCode, `${method} ${path}`).toBe(theirs.statusCode);
      expect(mine.headers.location, `${method} ${path}`).toBe(theirs.headers.location);
      expect(mine.headers.allow, `${method} ${path}`).toBe(theirs.headers.allow);
    }
    expect((await at(domain.domain, `/${slug}`)).headers.location).toBe(target);
    // A port and a trailing dot in Host name the same host.
    expect((await at(`${domain.domain.toUpperCase()}.:8080`, `/${slug}`)).statusCode).toBe(302);

    // The public page, once the policy publishes it, as on the subdomain's host.
    const patched = await api('PATCH', `/api/v1/subdomains/${subdomain}`, { stats_public: true });
    expect(patched.statusCode, patched.body).toBe(200);
    const page = await at(domain.domain, '/');
    const ownPage = await at(own, '/');
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    expect(page.body).toContain(subdomain);
    expect(page.statusCode).toBe(ownPage.statusCode);
    expect(page.headers['content-security-policy']).toBe(ownPage.headers['content-security-policy']);

    // The tracker script is served on any host, this one too.
    expect((await at(domain.domain, '/tracker.js')).statusCode).toBe(200);

    // The TLS proxy's ask: yes for it and for existing subdomains' hosts; no for anything else.
    const ask = (name: string) => app.inject({ method: 'GET', url: `/api/v1/tls-ask?domain=${encodeURIComponent(name)}` });
    expect((await ask(domain.domain)).statusCode).toBe(200);
    expect((await ask(domain.domain)).json().data).toEqual({ domain: domain.domain, served: true });
    expect((await ask(`${domain.domain.toUpperCase()}.`)).statusCode).toBe(200);
    expect((await ask(own)).statusCode).toBe(200);
    expect((await ask(`nosuchsubdomain${Date.now()}.${context.config.baseDomain}`)).statusCode).toBe(404);
    expect((await ask('unattached.example.net')).statusCode).toBe(404);
    expect((await ask(new URL(context.config.publicUrl).hostname)).statusCode).toBe(404);
    expect((await ask('../../etc/passwd')).json().error.code).toBe('not_found');
    const pending = await attach();
    expect((await ask(pending.domain)).statusCode).toBe(404);
  });

  it('re-verifies: a missing record makes it failing (still served, owner notified), then lapsed after the grace period (not served, notified); verifying again serves it', async () => {
    const domain = await attach();
    publish(domain);
    await verify(domain.domain);
    await servedAt(domain.domain);
    const deps = { ...context, repositories: postgresRepositories(context) };

    // Within DOMAIN_RECHECK_HOURS of its check: not due.
    dns.remove(domain.verification.name);
    const early = await recheckDomains(deps, { now: new Date(Date.now() + 3_600_000) });
    expect(early.failing).not.toContain(domain.domain);

    const first = new Date(Date.now() + 7 * 3_600_000);
    const report = await recheckDomains(deps, { now: first });
    expect(report.failing).toContain(domain.domain);
    const failing = (await api('GET', `/api/v1/domains/${domain.domain}`)).json().data;
    expect(failing).toMatchObject({ status: 'failing', served: true, failing_since: first.toISOString() });
    expect(failing.serve_until).toBe(new Date(first.getTime() + 72 * 3_600_000).toISOString());
    expect((await at(domain.domain, `/${slug}`)).statusCode).toBe(302);

    const lapsedAt = new Date(first.getTime() + 73 * 3_600_000);
    expect((await recheckDomains(deps, { now: lapsedAt })).lapsed).toContain(domain.domain);
    expect((await api('GET', `/api/v1/domains/${domain.domain}`)).json().data).toMatchObject({ status: 'lapsed', served: false });
    await notServedAt(domain.domain);
    expect((await app.inject({ method: 'GET', url: `/api/v1/tls-ask?domain=${domain.domain}` })).statusCode).toBe(404);

    const notices = (await api('GET', '/api/v1/notifications?limit=100')).json().data.notifications as Json[];
    const about = notices.filter((notice) => notice.data?.domain === domain.domain).map((notice) => notice.kind);
    expect(about.sort()).toEqual(['domain.failing', 'domain.lapsed']);

    // The record back: verifying serves it again.
    publish(domain);
    expect(await verify(domain.domain)).toMatchObject({ status: 'verified', served: true, failing_since: null });
    await servedAt(domain.domain);
  });

  it('a record found again while failing makes it verified again, without a lapse', async () => {
    const domain = await attach();
    publish(domain);
    await verify(domain.domain);
    const deps = { ...context, repositories: postgresRepositories(context) };
    dns.remove(domain.verification.name);
    const first = new Date(Date.now() + 7 * 3_600_000);
    await recheckDomains(deps, { now: first });
    publish(domain);
    const report = await recheckDomains(deps, { now: new Date(first.getTime() + 7 * 3_600_000) });
    expect(report.recovered).toContain(domain.domain);
    expect((await api('GET', `/api/v1/domains/${domain.domain}`)).json().data).toMatchObject({ status: 'verified', failing_since: null });
  });

  it('detaching stops serving the host', async () => {
    const domain = await attach();
    publish(domain);
    await verify(domain.domain);
    await servedAt(domain.domain);
    const removed = await api('DELETE', `/api/v1/domains/${domain.domain}`);
    expect(removed.statusCode, removed.body).toBe(200);
    expect(removed.json().data.domain).toBe(domain.domain);
    await notServedAt(domain.domain);
    expect((await api('GET', `/api/v1/domains/${domain.domain}`)).statusCode).toBe(404);
    expect((await api('DELETE', `/api/v1/domains/${domain.domain}`)).statusCode).toBe(404);
  });

  it('refuses bad names, the platform’s own domain, a taken domain, and another owner (who can neither read, verify, detach nor use it)', async () => {
    const base = context.config.baseDomain;
    for (const bad of [
      'localhost',
      '1.2.3.4',
      '[::1]',
      'a..example.org',
      '-a.example.org',
      'example.123',
      'x'.repeat(64) + '.example.org',
      'go example.org',
      '<b>.example.org',
    ]) {
      const refused = await api('POST', '/api/v1/domains', { domain: bad, subdomain });
      expect(refused.statusCode, bad).toBe(422);
      expect(refused.json().error.code).toBe('validation_error');
      expect(refused.json().error.details.domain, bad).toBeDefined();
    }
    for (const own of [`x.${base}`, `${subdomain}.${base}`]) {
      const refused = await api('POST', '/api/v1/domains', { domain: own, subdomain });
      expect(refused.statusCode, own).toBe(422);
      expect(refused.json().error.details.domain).toContain("platform's own domain");
    }
    expect((await api('POST', '/api/v1/domains', { domain: 'go.example.org', subdomain, extra: 1 })).statusCode).toBe(400);
    // The shortest name there is (the contract's fuzzer found it answered 500 once): attached, in lower case.
    const shortest = await api('POST', '/api/v1/domains', { domain: `0.${String.fromCharCode(65 + Math.floor(Math.random() * 26))}.`, subdomain });
    expect([201, 409]).toContain(shortest.statusCode);

    const mine = await attach();
    publish(mine);
    await verify(mine.domain);
    const theirs = await claimSubdomain(app, other);
    // Taken, whoever asks, in any case.
    const taken = await api('POST', '/api/v1/domains', { domain: mine.domain.toUpperCase(), subdomain: theirs }, other.auth);
    expect(taken.statusCode).toBe(409);
    expect(taken.json().error.code).toBe('conflict');
    // Not theirs to read, verify or detach; nor may they attach to a subdomain not theirs.
    for (const [method, url] of [
      ['GET', `/api/v1/domains/${mine.domain}`],
      ['POST', `/api/v1/domains/${mine.domain}/verify`],
      ['DELETE', `/api/v1/domains/${mine.domain}`],
    ] as const) {
      const refused = await api(method, url, undefined, other.auth);
      expect(refused.statusCode, `${method} ${url}`).toBe(403);
      expect(refused.json().error.code).toBe('not_owner');
    }
    const foreign = await api('POST', '/api/v1/domains', { domain: domainName(), subdomain }, other.auth);
    expect(foreign.statusCode).toBe(403);
    expect((await api('GET', '/api/v1/domains?limit=100', undefined, other.auth)).json().data.domains).toEqual([]);
    // Still the owner's and served.
    expect((await api('GET', `/api/v1/domains/${mine.domain}`)).json().data.status).toBe('verified');
    await servedAt(mine.domain);
    // Unknown, and not a domain at all: 404.
    expect((await api('GET', '/api/v1/domains/never-attached.example.net')).statusCode).toBe(404);
    expect((await api('GET', '/api/v1/domains/%3Cscript%3E')).statusCode).toBe(404);
    // Without the scope's token: 401.
    expect((await app.inject({ method: 'GET', url: '/api/v1/domains' })).statusCode).toBe(401);
  });

  it('lists the caller’s domains in order with pagination; a team admin manages those of the team’s subdomain, an editor is refused', async () => {
    const listed = await api('GET', '/api/v1/domains?limit=2');
    expect(listed.statusCode).toBe(200);
    const page = listed.json();
    expect(page.data.domains).toHaveLength(2);
    expect(page.meta.has_more).toBe(true);
    const next = await api('GET', `/api/v1/domains?limit=100&cursor=${encodeURIComponent(page.meta.next_cursor)}`);
    const all = [...page.data.domains, ...next.json().data.domains].map((domain: Json) => domain.domain);
    expect(all).toEqual([...all].sort());
    expect(new Set(all).size).toBe(all.length);

    const origin = new URL(context.config.publicUrl).origin;
    const team = await createTeam(app, origin, owner);
    const teamed = await api('PUT', `/api/v1/subdomains/${subdomain}/team`, { team_id: team });
    expect(teamed.statusCode, teamed.body).toBe(200);
    const admin = await createOwner(context, app);
    const editor = await createOwner(context, app);
    await joinTeam(app, origin, team, owner, admin, 'admin');
    await joinTeam(app, origin, team, owner, editor, 'editor');
    const byAdmin = await attach(domainName(), subdomain, admin);
    expect((await api('GET', `/api/v1/domains/${byAdmin.domain}`, undefined, admin.auth)).statusCode).toBe(200);
    expect((await api('GET', '/api/v1/domains?limit=100', undefined, admin.auth)).json().data.domains.map((domain: Json) => domain.domain)).toContain(
      byAdmin.domain,
    );
    const refused = await api('POST', '/api/v1/domains', { domain: domainName(), subdomain }, editor.auth);
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.details.reason).toBe('team_role_too_low');
    expect((await api('GET', `/api/v1/domains/${byAdmin.domain}`, undefined, editor.auth)).statusCode).toBe(403);
    expect((await api('GET', '/api/v1/domains?limit=100', undefined, editor.auth)).json().data.domains).toEqual([]);
  });
});
