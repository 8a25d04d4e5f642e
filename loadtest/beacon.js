// k6 load test of the browser beacon (loopback only, bounded in time): each iteration is one page
// view that consents and collects, as tracker.js does, on a visit of its own (data-subdomain).
//   k6 run -e BASE_URL=http://127.0.0.1:8080 -e SUBDOMAIN=demo loadtest/beacon.js
// Optional: -e REDIRECT_SLUG=promo attaches the beacons to redirect visits instead (the link needs
// `append_visit_id: true`): each iteration follows the redirect's lt_visit like a target page would.
// The track bucket allows RATE_LIMIT_TRACK per IP and visit id: each iteration is a new visit, so
// the default limit does not bind. A tenth of the page views refuse consent (collect must be 403).
import http from 'k6/http';
import { check } from 'k6';

const BASE_URL = __ENV.BASE_URL || 'http://127.0.0.1:8080';
const SUBDOMAIN = __ENV.SUBDOMAIN || 'demo';
const HOST = `${SUBDOMAIN}.${__ENV.BASE_DOMAIN || 'localhost'}`;
const REDIRECT_SLUG = __ENV.REDIRECT_SLUG;
// Browsers send JSON as text/plain so that no CORS preflight is needed; the beacon endpoints accept it.
const TEXT = { 'Content-Type': 'text/plain;charset=UTF-8', Origin: 'https://shop.example', 'User-Agent': 'Mozilla/5.0 (k6 beacon load test)' };

export const options = {
  scenarios: {
    beacons: { executor: 'constant-vus', vus: Number(__ENV.VUS || 20), duration: __ENV.DURATION || '30s' },
  },
  thresholds: {
    http_req_failed: ['rate<0.001'],
    'http_req_duration{name:consent}': ['p(99)<100'],
    'http_req_duration{name:collect}': ['p(99)<100'],
    checks: ['rate>0.999'],
  },
};

function visitIdFromRedirect() {
  const response = http.get(`${BASE_URL}/${REDIRECT_SLUG}`, {
    headers: { Host: HOST, 'User-Agent': TEXT['User-Agent'] },
    redirects: 0,
    tags: { name: 'redirect' },
    responseCallback: http.expectedStatuses(301, 302, 307, 308),
  });
  const match = /[?&]lt_visit=([0-9a-f-]{36})/.exec(response.headers.Location || '');
  check(response, { 'redirect carries lt_visit': () => Boolean(match) });
  return match ? match[1] : null;
}

export default function () {
  const refuse = Math.random() < 0.1;
  const body = { analytics: !refuse, lan_ip: !refuse && Math.random() < 0.5 };
  if (REDIRECT_SLUG) {
    const visitId = visitIdFromRedirect();
    if (!visitId) return;
    body.visit_id = visitId;
  } else {
    body.subdomain = SUBDOMAIN;
    body.page = { referrer: 'https://news.example/', query: 'utm_source=k6' };
  }
  const consent = http.post(`${BASE_URL}/tracker/consent`, JSON.stringify(body), {
    headers: TEXT,
    tags: { name: 'consent' },
    responseCallback: http.expectedStatuses(200),
  });
  const recorded = consent.status === 200 ? consent.json('data') : null;
  check(consent, {
    'consent recorded': (r) => r.status === 200,
    'CORS open': (r) => r.headers['Access-Control-Allow-Origin'] === '*',
    'token only with analytics consent': () => recorded !== null && (recorded.token !== null) === body.analytics,
  });
  if (!recorded) return;

  const signals = {
    token: recorded.token || undefined,
    timezone: 'Europe/Berlin',
    screen: { width: 1920, height: 1080, pixel_ratio: 2, color_depth: 24 },
    network: { effective_type: '4g', downlink: 10, rtt: 50 },
    capabilities: { cookies: true, touch_points: 0, hardware_concurrency: 8 },
  };
  if (recorded.lan_ip) signals.lan_ip = '192.168.1.20';
  const collect = http.post(`${BASE_URL}/tracker/collect`, JSON.stringify(signals), {
    headers: TEXT,
    tags: { name: 'collect' },
    responseCallback: http.expectedStatuses(202, 403),
  });
  check(collect, { 'collect accepted with consent, 403 without': (r) => r.status === (refuse ? 403 : 202) });
}
