import { v7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deduplicatedBy, toClickHouseTime } from '#shared/analytics/analytics.js';
import type { Context } from '#shared/context.js';
import type { listenerClient } from '#tests/support/listener.js';
import { claimSubdomain, createOwner, type TestOwner } from '#tests/support/owners.js';
import { startTestPlatform } from '#tests/support/platform.js';
import { createTeam, joinTeam } from '#tests/support/teams.js';
import { closeContext } from '#tests/support/context.js';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';

// The public page of a subdomain (`GET /` on `{name}.{BASE_DOMAIN}`), through the server's own
// listener as a socket reaches it: what each policy switch opens, and that nothing it hides is in
// the HTML. Visits are seeded two days back, so the rollups and every publish delay below count them.
type Json = Record<string, any>;

let context: Context;
let app: FastifyInstance;
let server: ReturnType<typeof listenerClient>;
let owner: TestOwner;

const DAY = 86_400_000;
const base = Math.floor((Date.now() - 2 * DAY) / 60_000) * 60_000;

async function seed(subdomain: string, link: Json, count: number, token = `${subdomain}-seed`): Promise<void> {
  const rows = Array.from({ length: count }, (_, index) => ({
    visit_id: v7({ msecs: base + index * 60_000 }),
    ts: toClickHouseTime(base + index * 60_000),
    kind: 'visit',
    owner_id: owner.id,
    subdomain,
    link_id: link.id,
    slug: link.slug,
    ip_public: '203.0.113.77',
    country: 'FR',
    city: 'Lyon',
    user_agent: 'Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0',
    browser: 'Firefox',
    os: 'Linux',
    device_type: 'desktop',
    referrer: 'https://news.example/item',
    referrer_host: 'news.example',
    is_bot: 0,
    version: 0,
  }));
  await context.analytics.client.insert({ table: 'visits', values: rows, format: 'JSONEachRow', clickhouse_settings: deduplicatedBy(token) });
}

async function setup(policy: Record<string, unknown>, { title, visits = 3 }: { title?: string; visits?: number } = {}) {
  const subdomain = await claimSubdomain(app, owner, policy);
  if (title) await app.inject({ method: 'PATCH', url: `/api/v1/subdomains/${subdomain}`, headers: owner.auth, payload: { title } });
  const created = await app.inject({
    method: 'POST',
    url: '/api/v1/links',
    headers: owner.auth,
    payload: { subdomain, target_url: 'https://target.example/secret-target', title: 'Spring sale', tags: ['hidden-tag'] },
  });
  const link = created.json().data;
  if (visits > 0) await seed(subdomain, link, visits);
  return { subdomain, link };
}

const open = (subdomain: string, headers: Record<string, string> = {}, path = '/') =>
  server.inject({ method: 'GET', url: path, headers: { host: `${subdomain}.localhost:8080`, ...headers }, remoteAddress: '198.51.100.40' });

beforeAll(async () => {
  ({ context, app, ingest: server, owner } = await startTestPlatform({ RATE_LIMIT_DEFAULT: '100000:60', SMTP_URL: undefined }));
}, 60_000);

afterAll(async () => {
  await app?.close();
  await closeContext(context);
});

describe('public page of a subdomain', () => {
  it('is server-rendered HTML without any script, with a strict CSP that admits only its own stylesheet', async () => {
    const { subdomain } = await setup({ stats_public: true });
    const page = await open(subdomain);
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    const csp = String(page.headers['content-security-policy']);
    expect(csp).toContain("script-src 'none'");
    expect(csp).toMatch(/style-src 'self' 'sha256-[A-Za-z0-9+/=]+'/);
    expect(csp).not.toContain('unsafe-inline');
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    expect(page.body).not.toMatch(/<script/i);
    expect(page.body).toMatch(/^<!doctype html><html lang="en">/);
    // No request of its own: no external stylesheet, image, font or favicon.
    expect(page.body).not.toMatch(/<(link|img)[^>]+(href|src)="(?!data:)/);
  });

  it('shows a private subdomain by its title only, saying its statistics are private', async () => {
    const { subdomain, link } = await setup({}, { title: 'Alice’s corner' });
    const page = await open(subdomain);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Alice’s corner');
    expect(page.body).toContain('keeps its statistics private');
    for (const hidden of [link.slug, 'Spring sale', 'Statistics of the last', 'Recent visits', owner.email]) expect(page.body).not.toContain(hidden);
  });

  it('shows statistics, links, visits and the owner only as far as the policy opens them, and no hidden field anywhere', async () => {
    const { subdomain, link } = await setup({ stats_public: true, stats_show_visits_list: true, stats_show_links: true, stats_show_ua: true });
    const page = await open(subdomain);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Statistics of the last 30 days');
    expect(page.body).toContain('Browsers');
    expect(page.body).toContain('Firefox');
    expect(page.body).toContain(`/${link.slug}`);
    expect(page.body).toContain('Spring sale');
    expect(page.body).toContain('Recent visits');
    // Geo, referrer, IP and owner are hidden: neither their values nor their headings appear.
    for (const hidden of [
      'FR',
      'Lyon',
      'Countries',
      'Cities',
      'news.example',
      'Referrers',
      '203.0.113.77',
      owner.email,
      ' · by ',
      'secret-target',
      'hidden-tag',
      link.id,
    ]) {
      expect(page.body, hidden).not.toContain(hidden);
    }
    const opened = await setup({
      stats_public: true,
      stats_show_visits_list: true,
      stats_show_geo: true,
      stats_show_referrer: true,
      stats_show_ip: true,
      stats_show_owner: true,
    });
    const full = await open(opened.subdomain);
    for (const shown of ['Countries', 'FR', 'Lyon', 'news.example', '203.0.113.77']) expect(full.body, shown).toContain(shown);
    expect(full.body).not.toContain(owner.email);
  });

  it('holds the same policy on a subdomain that belongs to a team, and shows no member, team id or address', async () => {
    const origin = new URL(context.config.publicUrl).origin;
    const teamOwner = await createOwner(context, app);
    const teamId = await createTeam(app, origin, teamOwner, 'Page team');
    await joinTeam(app, origin, teamId, teamOwner, owner, 'admin');
    const { subdomain, link } = await setup({ stats_public: true, stats_show_visits_list: true, stats_show_links: true, stats_show_ua: true });
    const assigned = await app.inject({ method: 'PUT', url: `/api/v1/subdomains/${subdomain}/team`, headers: owner.auth, payload: { team_id: teamId } });
    expect(assigned.statusCode, assigned.body).toBe(200);
    const page = await open(subdomain);
    expect(page.statusCode).toBe(200);
    for (const shown of ['Statistics of the last 30 days', 'Firefox', `/${link.slug}`, 'Recent visits']) expect(page.body, shown).toContain(shown);
    for (const hidden of ['FR', 'Lyon', 'news.example', '203.0.113.77', owner.email, teamOwner.email, teamId, owner.id, ' · by ', 'secret-target', link.id]) {
      expect(page.body, hidden).not.toContain(hidden);
    }
  });

  it('never shows visits younger than the publish delay, nor more items than stats_max_items', async () => {
    const delayed = await setup({ stats_public: true, stats_show_visits_list: true, stats_publish_delay_sec: 3 * 86_400 }, { visits: 4 });
    const page = await open(delayed.subdomain);
    expect(page.body).toContain('No public visits yet.');
    expect(page.body).toContain('Figures are published 3 days after the visits.');
    const capped = await setup({ stats_show_visits_list: true, stats_show_links: true, stats_max_items: 2 }, { visits: 5 });
    for (let index = 0; index < 3; index++) {
      await app.inject({
        method: 'POST',
        url: '/api/v1/links',
        headers: owner.auth,
        payload: { subdomain: capped.subdomain, target_url: `https://target.example/${index}` },
      });
    }
    const cappedPage = await open(capped.subdomain);
    expect(cappedPage.body.match(/<ul class="links">.*?<\/ul>/s)![0].match(/<li>/g)).toHaveLength(2);
    expect(
      cappedPage.body
        .match(/<table class="visits">.*?<\/table>/s)![0]
        .match(/<tbody>.*<\/tbody>/s)![0]
        .match(/<tr>/g),
    ).toHaveLength(2);
  });

  // Guards issue 34: any visitor could put text on an owner's page through a made-up path, shown
  // with a doubled slash.
  it('keeps the paths of attack attempts off the page unless the owner opts in, and shows them with one slash', async () => {
    const { subdomain } = await setup({ stats_show_visits_list: true, stats_show_links: true }, { visits: 0 });
    const at = base + 5 * 60_000;
    await context.analytics.client.insert({
      table: 'visits',
      values: [
        {
          visit_id: v7({ msecs: at }),
          ts: toClickHouseTime(at),
          kind: 'attack',
          owner_id: owner.id,
          subdomain,
          link_id: '',
          slug: '/wp-admin/FREE-BITCOIN-at-example',
          is_attack: 1,
          version: 0,
        },
        {
          visit_id: v7({ msecs: at + 1 }),
          ts: toClickHouseTime(at + 1),
          kind: 'attack',
          owner_id: owner.id,
          subdomain,
          link_id: '',
          slug: '/etc/passwd',
          is_attack: 1,
          version: 0,
        },
      ],
      format: 'JSONEachRow',
      clickhouse_settings: deduplicatedBy(`${subdomain}-attacks`),
    });
    const hidden = await open(subdomain);
    expect(hidden.body).toContain('>attack<');
    expect(hidden.body).not.toContain('FREE-BITCOIN');
    expect(hidden.body).not.toContain('passwd');
    const listed = await app.inject({ method: 'GET', url: `/api/v1/visits?subdomain=${subdomain}`, remoteAddress: '198.51.100.41' });
    expect(listed.json().data.visits.map((visit: Json) => visit.slug)).toEqual([undefined, undefined]);
    const patched = await app.inject({
      method: 'PATCH',
      url: `/api/v1/subdomains/${subdomain}`,
      headers: owner.auth,
      payload: { stats_show_attack_paths: true },
    });
    expect(patched.json().data.stats_show_attack_paths).toBe(true);
    const shown = await open(subdomain);
    expect(shown.body).toContain('<td>/wp-admin/FREE-BITCOIN-at-example</td>');
    expect(shown.body).toContain('<td>/etc/passwd</td>');
    expect(shown.body).not.toContain('//etc/passwd');
  });

  it('does not list a link that reached its visit limit, nor an expired one', async () => {
    const { subdomain, link } = await setup({ stats_show_links: true }, { visits: 0 });
    const create = async (payload: Json) =>
      (
        await app.inject({
          method: 'POST',
          url: '/api/v1/links',
          headers: owner.auth,
          payload: { subdomain, target_url: 'https://target.example/', ...payload },
        })
      ).json().data;
    const limited = await create({ title: 'Sold out', max_visits: 1 });
    const expiring = await create({ title: 'Last week', expires_at: new Date(Date.now() + 1_000).toISOString() });
    await sql`UPDATE links SET limit_reached_at = now() WHERE id = ${limited.id}`.execute(context.db.db);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const page = await open(subdomain);
    expect(page.body).toContain('Spring sale');
    expect(page.body).not.toContain('Sold out');
    expect(page.body).not.toContain('Last week');
    const listed = await app.inject({ method: 'GET', url: `/api/v1/links?subdomain=${subdomain}`, remoteAddress: '198.51.100.41' });
    expect(listed.json().data.links.map((item: Json) => item.slug)).toEqual([link.slug]);
    expect([limited.slug, expiring.slug]).not.toContain(link.slug);
  });

  // Guards issue 34: right after the first visits the page showed "Visits 0" and an empty chart box
  // beside a list of those visits, without saying why.
  it('says counting runs to the last whole quarter hour, and draws no empty chart before anything is counted', async () => {
    const { subdomain, link } = await setup({ stats_public: true, stats_show_visits_list: true, stats_show_links: true }, { visits: 0 });
    const now = Date.now();
    // In the quarter hour that is running: listed at once, counted when it ends.
    const at = Math.max(Math.floor(now / 900_000) * 900_000, now - 1_000);
    await context.analytics.client.insert({
      table: 'visits',
      values: [
        {
          visit_id: v7({ msecs: at }),
          ts: toClickHouseTime(at),
          kind: 'visit',
          owner_id: owner.id,
          subdomain,
          link_id: link.id,
          slug: link.slug,
          is_bot: 0,
          version: 0,
        },
      ],
      format: 'JSONEachRow',
      clickhouse_settings: deduplicatedBy(`${subdomain}-fresh`),
    });
    const page = await open(subdomain);
    expect(page.body).toMatch(/Counted up to .* UTC, the end of the last whole quarter hour: newer visits are counted when their quarter hour ends\./);
    expect(page.body).not.toContain('class="chart"');
    expect(page.body).toContain('No visits counted in this period yet.');
    expect(page.body).toContain(`<td>/${link.slug}</td>`);
    // Once counted, the chart is there.
    const counted = await setup({ stats_public: true });
    expect((await open(counted.subdomain)).body).toContain('class="chart"');
  });

  it('offers the periods as links (no script), counts only the one picked, by hour for 24 hours, and labels the chart', async () => {
    const { subdomain } = await setup({ stats_public: true });
    // The three visits are two days old: in the last 7 and 30 days, not in the last 24 hours.
    const month = await open(subdomain);
    expect(month.body).toContain('Statistics of the last 30 days');
    expect(month.body).toContain('<nav class="periods" aria-label="Period">');
    for (const period of ['24h', '7d', '30d', '90d']) expect(month.body).toContain(`href="?period=${period}"`);
    expect(month.body).toMatch(/<a href="\?period=30d" aria-current="page">30 days<\/a>/);
    expect(month.body).toMatch(/<figcaption class="muted">Visits per day \(UTC\), from .+ to .+; the highest day had 3\.<\/figcaption>/);
    // The y axis: 0, half and the highest day; the x axis: first, middle and last day.
    const labels = (axis: string) => month.body.match(new RegExp(`<text class="${axis}"[^>]*>[^<]+</text>`, 'g'))?.map((tick) => tick.replace(/<[^>]+>/g, ''));
    expect(labels('y')).toEqual(['0', '2', '3']);
    expect(labels('x')).toHaveLength(3);
    expect(month.body).not.toContain('<script');

    const day = await open(subdomain, {}, '/?period=24h');
    expect(day.body).toContain('Statistics of the last 24 hours');
    expect(day.body).toMatch(/<a href="\?period=24h" aria-current="page">/);
    expect(day.body).toContain('No visits counted in this period yet.');

    // Seven days from now back, counted up to the last whole quarter hour: eight UTC days are
    // touched, or seven in the first quarter hour of a day (the range then ends at midnight).
    const daysTouched = (at: number) => {
      const quarter = 900_000;
      const day = 86_400_000;
      const until = Math.floor(at / quarter) * quarter;
      const since = Math.floor((at - 7 * day) / quarter) * quarter;
      return Math.ceil(until / day) - Math.floor(since / day);
    };
    const before = daysTouched(Date.now());
    const week = await open(subdomain, {}, '/?period=7d');
    const after = daysTouched(Date.now());
    expect(week.body).toContain('class="chart"');
    expect([before, after]).toContain(week.body.match(/<tbody>(?:(?!<\/tbody>).)*<\/tbody>/s)?.[0].match(/<tr>/g)?.length);

    // The language stays in the links; an unknown period reads as the default, and says so.
    const german = await open(subdomain, {}, '/?period=7d&lang=de');
    expect(german.body).toContain('Statistiken der letzten 7 Tage');
    expect(german.body).toContain('href="?period=90d&amp;lang=de"');
    const odd = await open(subdomain, {}, '/?period=forever');
    expect(odd.statusCode).toBe(200);
    expect(odd.body).toContain('Statistics of the last 30 days');
    expect(odd.body).not.toContain('<script');
  });

  it('narrows the report to a link through links (no script) with stats_show_links, and ignores ?link= without it', async () => {
    const { subdomain, link } = await setup({ stats_public: true, stats_show_links: true });
    const other = (
      await app.inject({ method: 'POST', url: '/api/v1/links', headers: owner.auth, payload: { subdomain, target_url: 'https://target.example/other' } })
    ).json().data;
    await seed(subdomain, other, 2, `${subdomain}-other`);
    const totalOf = (body: string) => body.match(/<dd>(\d+)<\/dd>/)?.[1];
    const whole = await open(subdomain);
    expect(totalOf(whole.body)).toBe('5');
    // Each row of the link breakdown leads to the report of its link alone.
    expect(whole.body).toContain(`href="?period=30d&amp;link=${link.slug}"`);
    expect(whole.body).toContain(`aria-label="Show only the visits of /${other.slug}"`);
    const narrowed = await open(subdomain, {}, `/?period=7d&link=${other.slug}&lang=en`);
    expect(totalOf(narrowed.body)).toBe('2');
    expect(narrowed.body).toContain(`Only the visits of /${other.slug}.`);
    expect(narrowed.body).toContain('<a href="?period=7d&amp;lang=en">Show all links</a>');
    // The period links keep the link.
    expect(narrowed.body).toContain(`href="?period=90d&amp;link=${other.slug}&amp;lang=en"`);
    expect(narrowed.body).not.toContain('<script');
    // An unknown slug narrows nothing: the page is the whole report, without the filter's sentence.
    const unknown = await open(subdomain, {}, '/?link=no-such-link');
    expect(totalOf(unknown.body)).toBe('5');
    expect(unknown.body).not.toContain('Only the visits of');

    // Links hidden: ?link= is ignored and the page is the very page without it (no count leaks).
    await app.inject({ method: 'PATCH', url: `/api/v1/subdomains/${subdomain}`, headers: owner.auth, payload: { stats_show_links: false } });
    const hidden = await open(subdomain);
    const asked = await open(subdomain, {}, `/?link=${other.slug}`);
    expect(asked.statusCode).toBe(200);
    expect(asked.body).toBe(hidden.body);
    expect(asked.body).not.toContain(other.slug);
  });

  it('renders what users typed as text', async () => {
    const { subdomain } = await setup({ stats_show_links: true }, { title: '<img src=x onerror=alert(1)>', visits: 0 });
    await app.inject({
      method: 'POST',
      url: '/api/v1/links',
      headers: owner.auth,
      payload: { subdomain, target_url: 'https://target.example/x', title: '"><script>alert(2)</script>' },
    });
    const page = await open(subdomain);
    expect(page.body).not.toContain('<img src=x');
    expect(page.body).not.toContain('<script>');
    // Preact escapes `<` and `&` in text (enough: no tag can open), quotes in attributes.
    expect(page.body).toContain('&lt;img src=x onerror=alert(1)>');
    expect(page.body).toContain('&lt;script>alert(2)&lt;/script>');
  });

  it('speaks the language of Accept-Language or ?lang=', async () => {
    const { subdomain } = await setup({ stats_public: true });
    const german = await open(subdomain, { 'accept-language': 'de-DE,de;q=0.9' });
    expect(german.headers['content-language']).toBe('de');
    expect(german.body).toContain('Statistiken der letzten 30 Tage');
    const spanish = await open(subdomain, {}, '/?lang=es');
    expect(spanish.body).toContain('Estadísticas de los últimos 30 días');
  });

  it('answers an unknown subdomain with a helpful 404 page pointing to the dashboard', async () => {
    const page = await open('nobody-here', { accept: 'text/html' });
    expect(page.statusCode).toBe(404);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.body).toContain('No subdomain called nobody-here');
    expect(page.body).toContain('/subdomains');
  });

  it('leaves redirects and attack probes as they were: a slug redirects, an attack-looking query on / is refused', async () => {
    const { subdomain, link } = await setup({ stats_public: true }, { visits: 0 });
    const redirect = await open(subdomain, {}, `/${link.slug}`);
    expect(redirect.statusCode).toBe(302);
    expect(redirect.headers.location).toBe('https://target.example/secret-target');
    const attack = await open(subdomain, {}, "/?id=1'%20OR%20'1'='1");
    expect(attack.statusCode).toBe(404);
    expect(attack.body).not.toContain('Statistics of the last');
    const head = await server.inject({ method: 'HEAD', url: '/', headers: { host: `${subdomain}.localhost:8080` } });
    expect(head.statusCode).toBe(200);
    expect(head.body).toBe('');
  });
});
