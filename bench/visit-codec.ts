// The enricher's per-visit JavaScript on its own, without the platform around it: what decoding a
// message of `visits.raw` (JSON, the compiled visit schema) and encoding enriched visits into an
// insert's rows (JSONCompactEachRow) cost, in process CPU per visit (garbage collection included).
//   bash bench/run.sh visit-codec [rounds]
// Each round decodes 100 000 messages (10 000 distinct ones, ten times) and encodes 100 000 visits
// (a batch of 10 000, ten times); the medians of the rounds are printed. Run it on two builds in turn
// to compare them: the platform bench's spread on a busy machine hides a change of 1 µs a visit.
import { decodeVisit } from '#services/enricher/visit-consumer.js';
import { encodeVisits } from '#shared/visits/visit-rows.js';
import { enrich, type Enrichment } from '#shared/visits/enrichment.js';
import type { GeoLookup } from '#shared/geo.js';
import type { RawVisit } from '#shared/visits/raw-visit.js';

const rounds = Number(process.argv[2] ?? 5);
if (!Number.isInteger(rounds) || rounds < 1) {
  console.error('usage: bash bench/run.sh visit-codec [rounds ≥ 1]');
  process.exit(1);
}
const BATCH = 10_000;
const REPEATS = 10;
const sample = {
  visit_id: '0190b6e2-7a3c-7d2e-8f00-123456789abc',
  kind: 'visit',
  owner_id: 'usr_123',
  subdomain: 'acme',
  link_id: 'lnk_abc',
  ip_public: '203.0.113.9',
  user_agent: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36',
  referrer: '',
  accept_language: 'en-US,en;q=0.9',
  query: '',
  expects_beacon: false,
};
const start = Date.parse('2026-11-28T10:00:00.000Z');
const messages = Array.from({ length: BATCH }, (_, index) => ({
  key: 'lnk_abc',
  value: JSON.stringify({ ...sample, ts: new Date(start + index).toISOString(), slug: `promo${index % 50}` }),
}));
const visits = messages.map((message) => {
  const outcome = decodeVisit(message);
  if (outcome.kind !== 'ok') throw new Error(`the sample visit is refused: ${outcome.reason}`);
  return outcome.visit;
});
const geo: GeoLookup = { lookup: () => ({ country: 'DE', region: 'BE', city: 'Berlin', latitude: 52.5, longitude: 13.4 }) };
const enrichments: Enrichment[] = visits.map((visit: RawVisit) => ({ ...enrich(visit, geo), visitor_hash: 'a'.repeat(64), is_unique: 0 }));

/** Process CPU (user + system, every thread) per visit of `work`, run REPEATS times over the batch. */
async function cpuPerVisit(work: () => unknown): Promise<number> {
  const before = process.cpuUsage();
  for (let repeat = 0; repeat < REPEATS; repeat++) await work();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / (REPEATS * BATCH);
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

const decode: number[] = [];
const encode: number[] = [];
for (let round = 0; round < rounds; round++) {
  decode.push(await cpuPerVisit(() => messages.forEach((message) => decodeVisit(message))));
  encode.push(await cpuPerVisit(() => encodeVisits(visits, (_visit, index) => enrichments[index]!)));
}
console.log(
  `node ${process.version}; ${rounds} rounds of ${REPEATS * BATCH} visits: decodeVisit ${median(decode).toFixed(2)} µs a visit, encodeVisits ${median(encode).toFixed(2)} µs a visit (medians; process CPU)`,
);
