// PNG QR codes under load: 100 requests at once from one token, each for its own link (no cache
// hit), each retried after Retry-After when refused (429) until it has its image, while
// GET /api/v1/health and a redirect on a short host are probed one request at a time each.
//   bash bench/run.sh qr-load [size] [requests]        (defaults: 2048 px, the largest PNG, and 100)
// Target: health and the redirect answer within 100 ms at p99 during the burst, as at rest.
//
// The server is one process with the api and ingest roles (embedded stores), as `make run` starts
// it; the clients run on a thread of their own (bench/lib/qr-clients.ts), so that they never hold
// the event loop measured. The codes are ecc H, the most modules. Printed: the probes' p50/p99/max at
// rest and during the burst, the burst's length, the images' statuses and the 429s met on the way.
import type { AddressInfo } from 'node:net';
import { Worker } from 'node:worker_threads';
import { buildApp } from '#services/app.js';
import { claimSubdomain, createOwner } from '#tests/support/owners.js';
import { runBench } from './lib/context.js';
import { otherLoad, pad, quantile } from './lib/load.js';
import type { Probed, QrClientsInput, QrClientsResult } from './lib/qr-clients.js';

const size = Number(process.argv[2] ?? 2048);
const requests = Number(process.argv[3] ?? 100);
const TARGET_P99_MS = 100;
if (!Number.isInteger(size) || size < 64 || !Number.isInteger(requests) || requests < 1) {
  console.error('usage: bash bench/run.sh qr-load [size ≥ 64] [requests ≥ 1]');
  process.exit(1);
}

await runBench({ RATE_LIMIT_API: '1000000:60', RATE_LIMIT_REDIRECT: '1000000:60', LOG_LEVEL: 'silent' }, async (context) => {
  const { app } = await buildApp(context);
  try {
    const owner = await createOwner(context, app);
    const subdomain = await claimSubdomain(app, owner);
    const linkIds: string[] = [];
    for (let i = 0; i < requests; i++) {
      // Long slugs: more modules per code, as the longest short URLs have.
      const created = await app.inject({
        method: 'POST',
        url: '/api/v1/links',
        headers: owner.auth,
        payload: { subdomain, target_url: 'https://example.com/landing', slug: `qr-${i}-${'x'.repeat(48)}` },
      });
      if (created.statusCode !== 201) throw new Error(`link creation failed: ${created.body}`);
      linkIds.push(created.json<{ data: { id: string } }>().data.id);
    }
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as AddressInfo).port;
    console.log(
      `mode: ${context.db.kind}, one process (api + ingest); node ${process.version}; ${requests} PNG QR requests of ${size} px, ecc H, at once ` +
        'from one token, each retried after Retry-After (+ up to 250 ms jitter) until answered; probes one at a time, 10 ms apart',
    );
    console.log(`before the run: ${await otherLoad()}`);
    const input: QrClientsInput = {
      port,
      token: owner.token,
      linkIds,
      size,
      shortHost: `${subdomain}.localhost`,
      slug: `qr-0-${'x'.repeat(48)}`,
      restMs: 2_000,
    };
    const result = await new Promise<QrClientsResult>((resolve, reject) => {
      const clients = new Worker(new URL('./lib/qr-clients.js', import.meta.url), { workerData: input });
      clients.once('message', resolve);
      clients.once('error', reject);
      clients.once('exit', (code) => reject(new Error(`the clients' thread exited with ${code} before answering`)));
    });

    const p99 = (probed: Probed) =>
      quantile(
        [...probed.latencies].sort((a, b) => a - b),
        0.99,
      );
    const line = (name: string, probed: Probed) => {
      const sorted = [...probed.latencies].sort((a, b) => a - b);
      const unexpected = Object.entries(probed.unexpected).map(([status, count]) => `${count}× ${status}`);
      return (
        `${name.padEnd(22)}${pad(String(sorted.length), 7)}${pad(quantile(sorted, 0.5).toFixed(1), 9)}${pad(p99(probed).toFixed(1), 9)}` +
        `${pad(sorted.at(-1)!.toFixed(1), 9)}   ${unexpected.join(', ') || '-'}`
      );
    };
    console.log(`\n${'probe'.padEnd(22)}${pad('count', 7)}${pad('p50 ms', 9)}${pad('p99 ms', 9)}${pad('max ms', 9)}   other answers`);
    console.log(line('health, at rest', result.rest.health));
    console.log(line('redirect, at rest', result.rest.redirect));
    console.log(line('health, during burst', result.burst.health));
    console.log(line('redirect, during burst', result.burst.redirect));
    const statuses: Record<string, number> = {};
    for (const code of result.codes) statuses[code.status] = (statuses[code.status] ?? 0) + 1;
    const refused = result.codes.reduce((sum, code) => sum + code.refused, 0);
    const times = result.codes.map((code) => code.ms).sort((a, b) => a - b);
    console.log(
      `\nburst: ${(result.burstMs / 1000).toFixed(2)} s until every request had its answer; final statuses ${JSON.stringify(statuses)}; ` +
        `429s met on the way: ${refused}; time to answer p50 ${quantile(times, 0.5).toFixed(0)} ms, max ${times.at(-1)!.toFixed(0)} ms`,
    );
    console.log(`after the run: ${await otherLoad()}`);
    const worst = Math.max(p99(result.burst.health), p99(result.burst.redirect));
    const wrong = Object.keys({ ...result.burst.health.unexpected, ...result.burst.redirect.unexpected }).length > 0;
    console.log(
      `worst probe p99 during the burst: ${worst.toFixed(1)} ms (target ≤ ${TARGET_P99_MS} ms)${wrong ? ', with answers other than 200 and 302' : ''}: ` +
        `${worst <= TARGET_P99_MS && !wrong ? 'within target' : 'MISSED target'}`,
    );
  } finally {
    await app.close();
  }
});
