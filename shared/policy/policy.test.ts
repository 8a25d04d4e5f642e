import { describe, expect, it } from 'vitest';
import { POLICY_DEFAULTS, POLICY_SWITCHES, PolicySchema, publicView, publicVisitRow } from './policy.js';

describe('policy defaults', () => {
  it('are private: every switch off, no delay, 50 items', () => {
    for (const name of POLICY_SWITCHES) expect(POLICY_DEFAULTS[name]).toBe(false);
    expect(POLICY_DEFAULTS).toMatchObject({ stats_publish_delay_sec: 0, stats_max_items: 50 });
    expect(PolicySchema.safeParse(POLICY_DEFAULTS).success).toBe(true);
  });

  it('has exactly the eleven fields of the spec and the attack-path switch', () => {
    expect(Object.keys(PolicySchema.shape).sort()).toEqual(
      [
        'stats_public',
        'stats_show_visits_list',
        'stats_show_ip',
        'stats_show_internal_ip',
        'stats_show_geo',
        'stats_show_ua',
        'stats_show_referrer',
        'stats_show_links',
        'stats_show_owner',
        'stats_show_attack_paths',
        'stats_publish_delay_sec',
        'stats_max_items',
      ].sort(),
    );
  });
});

describe('publicView', () => {
  it('opens nothing but the row identity by default', () => {
    const view = publicView(POLICY_DEFAULTS);
    expect(view).toMatchObject({ stats: false, visitsList: false, links: false, owner: false, shown: [], maxItems: 50, publishDelaySec: 0 });
    expect(view.visitColumns).toEqual(['ts', 'kind']);
  });

  it('adds the columns of each detail switch and nothing else', () => {
    const view = publicView({ ...POLICY_DEFAULTS, stats_show_geo: true, stats_show_referrer: true });
    expect(view.visitColumns).toEqual(expect.arrayContaining(['country', 'region', 'city', 'referrer', 'referrer_host']));
    for (const hidden of ['ip_public', 'ip_lan', 'user_agent', 'browser']) expect(view.visitColumns).not.toContain(hidden);
    expect(view.details).toEqual({ ip: false, internal_ip: false, geo: true, ua: false, referrer: true });
    expect(view.shown).toEqual(['stats_show_geo', 'stats_show_referrer']);
  });

  // Guards issue 34: the switch said "country, region and city" and also published latitude and longitude.
  it('opens country, region and city with the geolocation switch, and the coordinates under no switch at all', () => {
    expect(publicView({ ...POLICY_DEFAULTS, stats_show_geo: true }).visitColumns).toEqual(['ts', 'kind', 'country', 'region', 'city']);
    const everything = Object.fromEntries(POLICY_SWITCHES.map((name) => [name, true]));
    const open = publicView({ ...POLICY_DEFAULTS, ...everything });
    for (const coordinate of ['latitude', 'longitude']) expect(open.visitColumns).not.toContain(coordinate);
  });

  it('never opens the LAN IP with the public IP switch alone', () => {
    expect(publicView({ ...POLICY_DEFAULTS, stats_show_ip: true }).visitColumns).not.toContain('ip_lan');
  });

  // Guards issue 34: any visitor could put text on an owner's public page through a made-up path.
  it("shows an attack attempt's path only with stats_show_attack_paths, a link's slug only with stats_show_links", () => {
    const attack = { ts: '2026-11-27T10:00:00.000Z', kind: 'attack', slug: '/wp-admin/FREE-BITCOIN-now' };
    const visit = { ts: '2026-11-27T10:00:00.000Z', kind: 'visit', slug: 'spring' };
    const links = publicView({ ...POLICY_DEFAULTS, stats_show_links: true });
    expect(links.visitColumns).toContain('slug');
    expect(publicVisitRow(attack, links)).toEqual({ ts: attack.ts, kind: 'attack' });
    expect(publicVisitRow(visit, links)).toEqual(visit);
    const paths = publicView({ ...POLICY_DEFAULTS, stats_show_attack_paths: true });
    expect(paths.visitColumns.filter((column) => column === 'slug')).toEqual(['slug']);
    expect(publicVisitRow(attack, paths)).toEqual(attack);
    expect(publicVisitRow(visit, paths)).toEqual({ ts: visit.ts, kind: 'visit' });
    const both = publicView({ ...POLICY_DEFAULTS, stats_show_links: true, stats_show_attack_paths: true });
    expect([publicVisitRow(attack, both), publicVisitRow(visit, both)]).toEqual([attack, visit]);
  });
});
