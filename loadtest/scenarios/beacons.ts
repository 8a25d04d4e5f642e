// The browser beacon as tracker.js drives it on a page with `data-subdomain`: a consent (which
// starts a visit of its own, kind `beacon`), then the signals under the consent token. One page
// view in ten refuses analytics: no token, no visit stored, and its collect must answer 403.
import { BROWSER_UA } from '#tests/support/platform-process.js';
import { Checks, runLoad } from '../load.js';
import type { Settings } from '../settings.js';
import { fromLoad, headerOf, type ScenarioResult, type StoredWhere } from './result.js';

const CONNECTIONS = 20;
const REFUSING = 0.1;
// Browsers send JSON as text/plain so that no CORS preflight is needed; the endpoints accept it.
const HEADERS = { 'content-type': 'text/plain;charset=UTF-8', origin: 'https://shop.example', 'user-agent': BROWSER_UA };

export async function beacons(base: string, settings: Settings, where: StoredWhere): Promise<ScenarioResult> {
  const checks = new Checks();
  let consents = 0;
  const load = await runLoad(base, {
    connections: CONNECTIONS,
    seconds: settings.seconds,
    rate: settings.rate,
    requests: [
      {
        method: 'POST',
        path: '/tracker/consent',
        headers: HEADERS,
        setupRequest: (request, context) => {
          context.refuse = Math.random() < REFUSING;
          context.lanIp = !context.refuse && Math.random() < 0.5;
          const page = { referrer: 'https://news.example/', query: 'utm_source=loadtest' };
          return { ...request, body: JSON.stringify({ subdomain: where.subdomain, analytics: !context.refuse, lan_ip: context.lanIp, page }) };
        },
        onResponse: (status, body, context, headers) => {
          checks.expect('consent answers 200', status === 200);
          checks.expect('CORS open', headerOf(headers, 'access-control-allow-origin') === '*');
          if (status !== 200) return;
          // A refusal stores nothing (no visit): only consents given start one.
          if (!context.refuse) consents += 1;
          let token: string | null | undefined;
          try {
            token = (JSON.parse(body) as { data?: { token?: string | null } }).data?.token;
          } catch {
            token = undefined;
          }
          checks.expect('a token only with analytics consent', token !== undefined && (token !== null) === !context.refuse);
          context.token = token;
        },
      },
      {
        method: 'POST',
        path: '/tracker/collect',
        headers: HEADERS,
        setupRequest: (request, context) => {
          const signals = {
            ...(context.token ? { token: context.token } : {}),
            timezone: 'Europe/Berlin',
            screen: { width: 1920, height: 1080, pixel_ratio: 2, color_depth: 24 },
            network: { effective_type: '4g', downlink: 10, rtt: 50 },
            capabilities: { cookies: true, touch_points: 0, hardware_concurrency: 8 },
            ...(context.lanIp ? { lan_ip: '192.168.1.20' } : {}),
          };
          return { ...request, body: JSON.stringify(signals) };
        },
        onResponse: (status, _body, context) => {
          if (context.refuse) checks.expect('collect without consent answers 403', status === 403);
          else checks.expect('collect answers 202', status === 202);
        },
      },
    ],
  });
  // Every consent given that was answered started a visit; refusals store none.
  return fromLoad('beacons (consent + collect)', load, checks, 100, { visits: { answered: consents, where: [where] } });
}
