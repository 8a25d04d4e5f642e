// k6 load test of the discovery endpoints (loopback only, bounded in time).
//   k6 run -e BASE_URL=http://127.0.0.1:8080 loadtest/discovery.js
// The default bucket allows RATE_LIMIT_DEFAULT per IP: start the server with a high limit
// (e.g. RATE_LIMIT_DEFAULT=1000000:60) so the test measures the server, not the limiter.
import http from 'k6/http';
import { check } from 'k6';

const BASE_URL = __ENV.BASE_URL || 'http://127.0.0.1:8080';

export const options = {
  scenarios: {
    discovery: { executor: 'constant-vus', vus: Number(__ENV.VUS || 20), duration: __ENV.DURATION || '20s' },
  },
  thresholds: {
    http_req_failed: ['rate<0.001'],
    'http_req_duration{name:health}': ['p(95)<50'],
    'http_req_duration{name:status}': ['p(95)<50'],
  },
};

export default function () {
  const health = http.get(`${BASE_URL}/api/v1/health`, { tags: { name: 'health' } });
  check(health, { 'health 200': (r) => r.status === 200, 'envelope ok': (r) => r.json('ok') === true });
  const status = http.get(`${BASE_URL}/api/v1/status`, { tags: { name: 'status' } });
  check(status, { 'status 200': (r) => r.status === 200, 'version 2.0.0': (r) => r.json('data.version') === '2.0.0' });
}
