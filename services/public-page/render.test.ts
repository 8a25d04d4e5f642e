import { describe, expect, it } from 'vitest';
import { DIMENSIONS } from '#shared/analytics/rollups.js';
import { PUBLIC_DIMENSION_ORDER, renderPublicPage, type PublicPageData, type PublicReport } from './render.js';

const product = { name: 'linktrack', url: 'https://links.example' };
const page: PublicPageData['page'] = {
  name: 'demo',
  title: null,
  url: 'https://demo.links.example/',
  public: { stats: true, visits_list: true, links: true, owner: false, publish_delay_sec: 0, max_items: 50 },
};
const report = (visits: number[]): PublicReport => ({
  range: { since: '2026-10-28T00:00:00.000Z', until: '2026-11-27T10:15:00.000Z' },
  totals: { visits: visits.reduce((sum, value) => sum + value, 0), unique_visitors: 0, bots: 0, attacks: 0 },
  series: visits.map((count, index) => ({ t: new Date(Date.UTC(2026, 10, 25 + index)).toISOString(), visits: count })),
  top: {},
});

describe('the public page', () => {
  it('shows every dimension of the reports once, in its own order (a dimension added to DIMENSIONS must be placed here)', () => {
    expect(new Set(PUBLIC_DIMENSION_ORDER).size).toBe(PUBLIC_DIMENSION_ORDER.length);
    expect([...PUBLIC_DIMENSION_ORDER].sort()).toEqual([...DIMENSIONS].sort());
  });

  // Guards issue 34: an attack attempt's slug is its whole path, and it showed as `//etc/passwd`.
  it("shows a link's slug and an attack attempt's path each with one leading slash", () => {
    const html = renderPublicPage(
      {
        period: '30d',
        page,
        visits: [
          { ts: '2026-11-27T10:00:00.000Z', kind: 'attack', slug: '/etc/passwd' },
          { ts: '2026-11-27T09:00:00.000Z', kind: 'visit', slug: 'spring' },
        ],
      },
      'en',
      product,
    );
    expect(html).toContain('<td>/etc/passwd</td>');
    expect(html).toContain('<td>/spring</td>');
    expect(html).not.toContain('//etc');
  });

  // Guards issue 34: "Visits 0" beside an empty chart box, right after the first visits.
  it('says the figures run to the last whole quarter hour and draws no empty chart', () => {
    const empty = renderPublicPage({ period: '30d', page, report: report([0, 0, 0]) }, 'en', product);
    expect(empty).toContain('Counted up to 11/27/26, 10:15:00 AM UTC, the end of the last whole quarter hour');
    expect(empty).not.toContain('class="chart"');
    expect(empty).toContain('No visits counted in this period yet.');
    const german = renderPublicPage({ period: '30d', page, report: report([0, 0]) }, 'de', product);
    expect(german).toContain('In diesem Zeitraum wurden noch keine Besuche gezählt.');
    const drawn = renderPublicPage({ period: '30d', page, report: report([0, 2, 1]) }, 'en', product);
    expect(drawn).toContain('class="chart"');
    expect(drawn).not.toContain('No visits counted');
  });

  it("says from when the bars run when the owner's stats_max_items keeps only the newest days", () => {
    // A range of three days whose series has them all.
    const all = { ...report([1, 2, 3]), range: { since: '2026-11-25T00:00:00.000Z', until: '2026-11-27T10:15:00.000Z' } };
    const whole = renderPublicPage({ period: '30d', page, report: all }, 'en', product);
    expect(whole).toContain('Visits per day (UTC), from 11/25/26, 12:00:00 AM to 11/27/26, 10:15:00 AM; the highest day had 3.</figcaption>');
    expect(whole).not.toContain('items in a list');
    // A 30-day range (from Oct 28) whose series starts on Nov 25: cut to its newest points.
    const cut = report([1, 2, 3]);
    const html = renderPublicPage({ period: '30d', page, report: cut }, 'en', product);
    expect(html).toContain(
      'Visits per day (UTC), from 11/25/26, 12:00:00 AM to 11/27/26, 10:15:00 AM; the highest day had 3. The owner shows at most 3 items in a list: the last 3 days of the period.',
    );
    const german = renderPublicPage({ period: '30d', page, report: cut }, 'de', product);
    expect(german).toContain('die letzten 3 Tage des Zeitraums');
  });
});
