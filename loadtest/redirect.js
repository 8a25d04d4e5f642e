// k6 load test of redirects on a short host (loopback only, bounded in time).
//   k6 run -e BASE_URL=http://127.0.0.1:8080 -e SUBDOMAIN=demo -e SLUGS=hello,promo loadtest/redirect.js
// The short host is `{SUBDOMAIN}.{BASE_DOMAIN}` (default base domain `localhost`), sent as the Host
// header so no DNS is needed. Create the links first (POST /api/v1/links). The redirect bucket
// allows RATE_LIMIT_REDIRECT per IP and link: start the server with a high limit (e.g.
// RATE_LIMIT_REDIRECT=100000000:60) so the test measures the server, not the limiter.
import http from 'k6/http';
import { check } from 'k6';

const BASE_URL = __ENV.BASE_URL || 'http://127.0.0.1:8080';
const HOST = `${__ENV.SUBDOMAIN || 'demo'}.${__ENV.BASE_DOMAIN || 'localhost'}`;
const SLUGS = (__ENV.SLUGS || 'hello').split(',');

export const options = {
  scenarios: {
    redirects: { executor: 'constant-vus', vus: Number(__ENV.VUS || 50), duration: __ENV.DURATION || '30s' },
  },
  thresholds: {
    http_req_failed: ['rate<0.001'],
    'http_req_duration{name:redirect}': ['p(99)<50'],
    checks: ['rate>0.999'],
  },
};

export default function () {
  const slug = SLUGS[Math.floor(Math.random() * SLUGS.length)];
  const response = http.get(`${BASE_URL}/${slug}?utm_source=k6`, {
    headers: { Host: HOST, 'User-Agent': 'k6-loadtest' },
    redirects: 0,
    tags: { name: 'redirect' },
    responseCallback: http.expectedStatuses(301, 302, 307, 308),
  });
  check(response, {
    'is a redirect': (r) => [301, 302, 307, 308].includes(r.status),
    'has a Location': (r) => Boolean(r.headers.Location),
    'not cached by shared caches': (r) => r.headers['Cache-Control'] === 'private, max-age=0',
  });
}
