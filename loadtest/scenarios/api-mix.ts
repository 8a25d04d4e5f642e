// An integration reading with the owners' API tokens: each owner's links, the report of their
// subdomain and their visit list, in turn, over the visits the earlier scenarios stored. One client
// by default (LOADTEST_API_CONNECTIONS): the visit list's exact total is a count of distinct visits
// over all of the owner's, about 0.3 s at 300 000 visits on the embedded chDB, and ten at once took
// ten times as long as one (measured here), so every client more adds one such wait to everyone's
// latency (2 clients: p99 0.97 s on a busy machine; 10: 6.8 s). The bound is the dashboard's budget
// for a page's first load, 1 s.
import { Checks, runLoad, type LoadRequest } from '../load.js';
import type { Owner } from '../seed.js';
import type { Settings } from '../settings.js';
import { fromLoad, type ScenarioResult } from './result.js';

export async function apiMix(base: string, settings: Settings, owners: Owner[]): Promise<ScenarioResult> {
  const checks = new Checks();
  const ok =
    (name: string): LoadRequest['onResponse'] =>
    (status, body) =>
      checks.expect(`${name} answers 200 ok`, status === 200 && body.startsWith('{"ok":true'));
  const requests = owners.flatMap((owner): LoadRequest[] => {
    const headers = { authorization: `Bearer ${owner.token}` };
    return [
      { method: 'GET', path: '/api/v1/links?limit=50', headers, onResponse: ok('list links') },
      { method: 'GET', path: `/api/v1/stats/subdomain/${owner.subdomain}`, headers, onResponse: ok('stats') },
      { method: 'GET', path: '/api/v1/visits?limit=50', headers, onResponse: ok('visit list') },
    ];
  });
  const load = await runLoad(base, { connections: settings.apiConnections, seconds: settings.seconds, rate: settings.rate, requests });
  return fromLoad('API mix (links, stats, visits)', load, checks, 1000);
}
