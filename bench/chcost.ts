// temporary experiment: what an insert into visits costs, by variant
import { v7 as uuidv7 } from 'uuid';
import { enrich } from '../services/enricher/enrich.js';
import { encodeVisits } from '../services/enricher/visit-writer.js';
import { visitorHash } from '../services/enricher/visitors.js';
import { openGeoLookup } from '../shared/geo.js';
import { runBench } from './lib/context.js';
import type { RawVisit } from '../shared/visits/raw-visit.js';
const variant = process.argv[2] ?? 'base';
const total = 200_000;
await runBench({}, async (context) => {
  const geo = await openGeoLookup();
  const visit = (i: number): RawVisit => ({ visit_id: uuidv7(), ts: new Date().toISOString(), kind: 'visit', owner_id: 'o1', expects_beacon: false, subdomain: 'bench', link_id: `l_${i % 5}`, slug: 's', ip_public: `81.2.${(i >> 8) % 256}.${i % 256}`, user_agent: 'Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0', referrer: '', accept_language: 'en', query: '' });
  const c = context.analytics.client;
  if (variant.includes('nomv')) for (const v of ['stats_series_mv', 'stats_dims_mv', 'stats_series_daily_mv', 'stats_dims_daily_mv']) await c.command({ query: `DROP VIEW IF EXISTS ${v}` });
  if (variant.includes('noidx')) for (const v of ['visit_id_bf', 'owner_bf', 'country_set', 'insert_token_bf']) await c.command({ query: `ALTER TABLE visits DROP INDEX IF EXISTS ${v}` });
  const inserts = [];
  for (let s = 0; s < total; s += 10_000) {
    const vs = Array.from({ length: 10_000 }, (_, k) => visit(s + k));
    const e = encodeVisits(vs, (raw) => ({ ...enrich(raw, geo), visitor_hash: visitorHash('b', raw.ip_public, raw.user_agent), is_unique: 0 }));
    if (variant.includes('nooi')) e.settings = { ...e.settings, optimize_on_insert: 0 };
    inserts.push(e);
  }
  const t = performance.now(); const cpu = process.cpuUsage();
  for (const i of inserts) await context.analytics.insertEncoded(i);
  const ins = process.cpuUsage(cpu); const el = performance.now() - t;
  await new Promise((r) => setTimeout(r, 5000));
  const all = process.cpuUsage(cpu);
  console.log(`${variant}: insert CPU ${((ins.user + ins.system) / total).toFixed(1)} µs/row, incl. 5 s of merges after ${((all.user + all.system) / total).toFixed(1)} µs/row, ${el.toFixed(0)} ms`);
});
