// A visit as an ingest node publishes it (its JSON is about 500 bytes), for the benchmarks of the
// Kafka path: the i-th of a run, to the link given.
import { v7 as uuidv7 } from 'uuid';

const AGENTS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0',
];

/** The i-th visit of a run, to `link` (its id and slug), keyed by the link id as the edge keys it. */
export function sampleVisit(i: number, link: { id: string; slug: string }): { key: string; value: string } {
  const visit = {
    visit_id: uuidv7(),
    ts: new Date().toISOString(),
    kind: 'visit',
    owner_id: '0193a1f2-7c1e-7d3a-9b1e-3f6c2a1d4e5f',
    expects_beacon: false,
    subdomain: 'bench-shop',
    link_id: link.id,
    slug: link.slug,
    ip_public: `81.2.${(i >> 8) % 256}.${i % 256}`,
    user_agent: AGENTS[i % AGENTS.length]!,
    referrer: i % 3 === 0 ? 'https://news.example/item' : '',
    accept_language: 'en-GB,en;q=0.9',
    query: i % 2 === 0 ? 'utm_source=newsletter&utm_medium=email' : '',
  };
  return { key: visit.link_id, value: JSON.stringify(visit) };
}
