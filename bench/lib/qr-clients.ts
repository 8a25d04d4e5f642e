// The client side of bench/qr-load.ts, on its own thread so that it never delays the server's event
// loop it measures: probes of /api/v1/health and of a redirect, one request at a time each, before
// and during a burst of PNG QR requests that are retried after Retry-After when refused (429).
import { Agent, request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { parentPort, workerData } from 'node:worker_threads';

export interface QrClientsInput {
  port: number;
  token: string;
  /** The links whose QR codes are asked for: one request each, all at once. */
  linkIds: string[];
  size: number;
  /** Host and path of the probed redirect. */
  shortHost: string;
  slug: string;
  /** Probing before the burst, for the figures at rest. */
  restMs: number;
}

/** A probe's latencies, and the answers other than the one expected (health answers 503 when its dependency checks time out), by status. */
export interface Probed {
  latencies: number[];
  unexpected: Record<string, number>;
}

export interface QrClientsResult {
  rest: { health: Probed; redirect: Probed };
  burst: { health: Probed; redirect: Probed };
  /** Per QR request: ms until its image (retries included), the 429s it met, its last status. */
  codes: { ms: number; refused: number; status: number }[];
  burstMs: number;
}

const input = workerData as QrClientsInput;
const probeAgent = new Agent({ keepAlive: true, maxSockets: 2 });
const loadAgent = new Agent({ keepAlive: true, maxSockets: Infinity });

/** One GET: its status, Retry-After and the ms until the body's last byte. */
function get(path: string, headers: Record<string, string>, agent: Agent): Promise<{ status: number; retryAfter: number; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const sent = request({ host: '127.0.0.1', port: input.port, path, headers, agent }, (response) => {
      response.resume();
      response.once('end', () =>
        resolve({ status: response.statusCode ?? 0, retryAfter: Number(response.headers['retry-after'] ?? 1), ms: performance.now() - started }),
      );
    });
    sent.once('error', reject);
    sent.end();
  });
}

/** Probes one path until `until()` says stop, one request at a time with 10 ms between them. */
async function probe(path: string, headers: Record<string, string>, expected: number, until: () => boolean): Promise<Probed> {
  const probed: Probed = { latencies: [], unexpected: {} };
  while (!until()) {
    const answer = await get(path, headers, probeAgent);
    if (answer.status !== expected) probed.unexpected[answer.status] = (probed.unexpected[answer.status] ?? 0) + 1;
    probed.latencies.push(answer.ms);
    await sleep(10);
  }
  return probed;
}

const probes = (until: () => boolean) =>
  Promise.all([probe('/api/v1/health', {}, 200, until), probe(`/${input.slug}`, { host: input.shortHost }, 302, until)]).then(([health, redirect]) => ({
    health,
    redirect,
  }));

const restEnds = performance.now() + input.restMs;
const rest = await probes(() => performance.now() >= restEnds);

let finished = false;
const during = probes(() => finished);
const burstStarted = performance.now();
const auth = { authorization: `Bearer ${input.token}` };
const codes = await Promise.all(
  input.linkIds.map(async (id) => {
    const started = performance.now();
    let refused = 0;
    for (;;) {
      const answer = await get(`/api/v1/links/${id}/qr?format=png&size=${input.size}&ecc=H`, auth, loadAgent);
      if (answer.status !== 429) return { ms: performance.now() - started, refused, status: answer.status };
      refused += 1;
      // As the contract asks: Retry-After plus random jitter.
      await sleep(answer.retryAfter * 1000 + Math.random() * 250);
    }
  }),
);
const burstMs = performance.now() - burstStarted;
finished = true;
const burst = await during;
probeAgent.destroy();
loadAgent.destroy();
parentPort!.postMessage({ rest, burst, codes, burstMs } satisfies QrClientsResult);
