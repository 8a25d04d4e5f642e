import { performance } from 'node:perf_hooks';
import { Resvg } from '@resvg/resvg-js';
import type { FastifyInstance } from 'fastify';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { createInFlightGuard, IN_FLIGHT_LIMITS, type InFlightGuard } from '#shared/http/in-flight.js';
import { closeContext, createTestContext } from '#tests/support/context.js';
import { claimSubdomain, createOwner, type TestOwner } from '#tests/support/owners.js';
import { zbarReader } from '#tests/support/zbar.js';
import { buildApp } from '#services/app.js';
import { createQrRenderer } from './qr.js';

let context: Context;
let app: FastifyInstance;
let inFlight: InFlightGuard;
let alice: TestOwner;
let bob: TestOwner;
let aliceSub: string;
const zbarimg = zbarReader();
const zbar = (png: Buffer) => zbarimg.read(png);

beforeAll(async () => {
  context = await createTestContext();
  // The test holds this guard's slots to stand for renders in flight.
  inFlight = createInFlightGuard();
  ({ app } = await buildApp(context, { inFlight }));
  [alice, bob] = await Promise.all([createOwner(context, app), createOwner(context, app)]);
  aliceSub = await claimSubdomain(app, alice);
});

afterAll(async () => {
  await app?.close();
  await closeContext(context);
  zbarimg.close();
});

type Link = { id: string; short_url: string };

async function createLink(owner: TestOwner, subdomain: string, slug?: string): Promise<Link> {
  const response = await app.inject({
    method: 'POST',
    url: '/api/v1/links',
    headers: owner.auth,
    payload: { subdomain, target_url: 'https://example.com/qr', ...(slug ? { slug } : {}) },
  });
  if (response.statusCode !== 201) throw new Error(`create failed: ${response.statusCode} ${response.body}`);
  return response.json().data as Link;
}

const qr = (owner: TestOwner, link: Link, query: string, on = app) =>
  on.inject({ method: 'GET', url: `/api/v1/links/${link.id}/qr?${query}`, headers: owner.auth });

/** The least size a 422 on `size` names. */
const leastSize = (body: { error: { details: { size: string } } }) => Number(/at least (\d+)/.exec(body.error.details.size)?.[1]);

describe('QR images scan', () => {
  it('every accepted size, margin and ecc at the corners scans with zbarimg, as PNG and as SVG; a size too small is 422 naming the least size, which scans', async () => {
    const links = [await createLink(alice, aliceSub), await createLink(alice, aliceSub, `a${'b'.repeat(63)}`)];
    const failures: string[] = [];
    const scans: { png: Buffer; text: string; which: string }[] = [];
    let accepted = 0;
    let refused = 0;
    for (const link of links)
      for (const ecc of ['L', 'H'])
        for (const margin of [0, 1, 4, 16])
          for (const size of [64, 65, 100, 257, 1024])
            for (const format of ['png', 'svg']) {
              const query = `format=${format}&size=${size}&margin=${margin}&ecc=${ecc}`;
              let response = await qr(alice, link, query);
              let drawn = size;
              if (response.statusCode === 422) {
                refused += 1;
                expect(response.json().error.code).toBe('validation_error');
                const least = leastSize(response.json());
                expect(least, query).toBeGreaterThan(size);
                expect((await qr(alice, link, `format=${format}&size=${least - 1}&margin=${margin}&ecc=${ecc}`)).statusCode, query).toBe(422);
                response = await qr(alice, link, `format=${format}&size=${least}&margin=${margin}&ecc=${ecc}`);
                drawn = least;
              }
              expect(response.statusCode, query).toBe(200);
              accepted += 1;
              const png = format === 'png' ? response.rawPayload : Buffer.from(new Resvg(response.body, { background: 'white' }).render().asPng());
              const image = PNG.sync.read(png);
              const which = `${query}${drawn === size ? '' : ` (drawn at ${drawn})`}${link === links[1] ? ', long slug' : ''}`;
              if (image.width !== drawn || image.height !== drawn) failures.push(`${which}: ${image.width}×${image.height} px`);
              scans.push({ png, text: link.short_url, which });
            }
    // zbarimg a few at a time: it is the slow part.
    for (let i = 0; i < scans.length; i += 8)
      await Promise.all(
        scans.slice(i, i + 8).map(async (scan) => {
          if ((await zbar(scan.png)) !== scan.text) failures.push(`${scan.which}: does not scan`);
        }),
      );
    expect(failures).toEqual([]);
    expect(accepted).toBe(160);
    expect(refused).toBeGreaterThan(0);
  }, 120_000);

  it('answers a PNG and an SVG of 2048 px, the cap v1 always had, and refuses 2049 px with 422', async () => {
    const link = await createLink(alice, aliceSub);
    const png = await qr(alice, link, 'format=png&size=2048&ecc=H');
    expect(png.statusCode).toBe(200);
    expect(png.headers['content-type']).toContain('image/png');
    expect(png.rawPayload.readUInt32BE(16)).toBe(2048);
    expect((await qr(alice, link, 'format=png&size=2049')).statusCode).toBe(422);
    const svg = await qr(alice, link, 'format=svg&size=2048');
    expect(svg.statusCode).toBe(200);
    expect(svg.body).toContain('width="2048"');
    expect((await qr(alice, link, 'format=svg&size=2049')).statusCode).toBe(422);
  });
});

// ---- QR colours (issue 40, item 8) ----
/** The colours of a PNG's pixels, `rrggbb`, in order of first appearance. */
function coloursOf(png: Buffer): string[] {
  const { data } = PNG.sync.read(png);
  const seen = new Set<string>();
  for (let at = 0; at < data.length; at += 4) seen.add(data.subarray(at, at + 3).toString('hex'));
  return [...seen];
}

describe('QR colours', () => {
  it('codes in colour, down to a contrast of 4.5:1 (767676 on white, 4.54:1), scan with zbarimg as PNG and SVG and are drawn in exactly those colours', async () => {
    const link = await createLink(alice, aliceSub);
    const pairs = [
      { fg: '1a5fb4', bg: 'ffffff' },
      { fg: '000000', bg: 'ffd700' },
      { fg: '767676', bg: 'ffffff' },
      { fg: '3d1f00', bg: 'f5deb3' },
      { fg: '%231A5FB4', bg: '%23FFF8E7', expect: { fg: '1a5fb4', bg: 'fff8e7' } },
    ];
    const failures: string[] = [];
    for (const pair of pairs)
      for (const [size, margin, ecc] of [
        [100, 0, 'L'],
        [512, 4, 'H'],
      ] as const)
        for (const format of ['png', 'svg']) {
          const query = `format=${format}&size=${size}&margin=${margin}&ecc=${ecc}&fg=${pair.fg}&bg=${pair.bg}`;
          const response = await qr(alice, link, query);
          expect(response.statusCode, `${query}: ${response.body}`).toBe(200);
          const colours = pair.expect ?? pair;
          const png = format === 'png' ? response.rawPayload : Buffer.from(new Resvg(response.body, { background: 'white' }).render().asPng());
          if (format === 'svg') expect(response.body).toContain(`fill="#${colours.fg}"`);
          expect(coloursOf(png).sort(), query).toEqual([colours.fg, colours.bg].sort());
          if ((await zbar(png)) !== link.short_url) failures.push(`${query}: does not scan`);
        }
    expect(failures).toEqual([]);
  }, 120_000);

  it('refuses low contrast and light modules on dark with 422 on fg naming the ratio, and a colour that is not six hex digits; black on white stays a greyscale PNG', async () => {
    const link = await createLink(alice, aliceSub);
    const refused = async (query: string) => {
      const response = await qr(alice, link, `format=png&${query}`);
      expect(response.statusCode, query).toBe(422);
      const error = response.json().error as { code: string; details: Record<string, string> };
      expect(error.code).toBe('validation_error');
      return error.details;
    };
    // 777777 on white is 4.478:1, just under the limit (shown floored: 4.47).
    expect((await refused('fg=777777&bg=ffffff')).fg).toContain('(this pair has 4.47:1)');
    expect((await refused('fg=ffff00&bg=ffffff')).fg).toContain('at least 4.5:1');
    // White on black has 21:1, but inverted: the modules must be the darker.
    expect((await refused('fg=ffffff&bg=000000')).fg).toContain('must be darker than bg');
    expect((await refused('fg=ffffff')).fg).toContain('must be darker than bg');
    expect(Object.values(await refused('fg=blue')).join()).toContain('six hex digits');
    expect(Object.values(await refused('bg=%23fff')).join()).toContain('six hex digits');
    // The defaults and their spelling out draw the same 1-bit greyscale image (colour type 0, no palette).
    const plain = await qr(alice, link, 'format=png');
    expect(plain.rawPayload[25]).toBe(0);
    expect((await qr(alice, link, 'format=png&fg=000000&bg=FFFFFF')).rawPayload).toEqual(plain.rawPayload);
    const coloured = await qr(alice, link, 'format=png&fg=1a5fb4');
    expect(coloured.rawPayload[25]).toBe(3);
    expect(coloured.rawPayload.includes(Buffer.from('PLTE'))).toBe(true);
  });
});
// ---- end QR colours ----

describe('bounded PNG renders per account', () => {
  it("answers 429 rate_limited with Retry-After while the account's PNG requests are all in progress; other accounts and SVG still answer", async () => {
    const link = await createLink(alice, aliceSub);
    const held = Array.from({ length: IN_FLIGHT_LIMITS.qr_png.max }, () => inFlight.acquire('qr_png', alice.id));
    try {
      const refused = await qr(alice, link, 'format=png&size=301');
      expect(refused.statusCode).toBe(429);
      expect(refused.headers['retry-after']).toBe('1');
      expect(refused.json()).toMatchObject({
        ok: false,
        error: { code: 'rate_limited', details: { reason: 'too_many_in_flight', work: 'qr_png', limit: IN_FLIGHT_LIMITS.qr_png.max } },
      });
      // Not a window's refusal: the api bucket's headers stay those of the counter, which has requests left.
      expect(Number(refused.headers['ratelimit-remaining'])).toBeGreaterThan(0);
      expect((await app.inject({ method: 'GET', url: '/metrics' })).body).toMatch(/^rate_limited_total\{bucket="in_flight"\} [1-9]/m);
      // Accept: image/png is a PNG request too.
      const byAccept = await app.inject({ method: 'GET', url: `/api/v1/links/${link.id}/qr`, headers: { ...alice.auth, accept: 'image/png' } });
      expect(byAccept.statusCode).toBe(429);
      expect((await qr(alice, link, 'format=svg&size=301')).statusCode).toBe(200);
      const bobs = await createLink(bob, await claimSubdomain(app, bob));
      expect((await qr(bob, bobs, 'format=png&size=301')).statusCode).toBe(200);
    } finally {
      for (const release of held) release();
    }
    expect((await qr(alice, link, 'format=png&size=301')).statusCode).toBe(200);
    expect(inFlight.held('qr_png', alice.id)).toBe(0);
  });

  it('a refused render (422) gives its slot back', async () => {
    const link = await createLink(alice, aliceSub);
    for (let i = 0; i < IN_FLIGHT_LIMITS.qr_png.max + 2; i++) expect((await qr(alice, link, 'format=png&size=64&margin=16')).statusCode).toBe(422);
    expect(inFlight.held('qr_png', alice.id)).toBe(0);
  });
});

describe('the cache of rendered codes', () => {
  it('answers the same bytes for the same link and parameters, and others for other parameters', async () => {
    const link = await createLink(alice, aliceSub);
    const first = await qr(alice, link, 'format=png&size=400&ecc=Q');
    const second = await qr(alice, link, 'format=png&size=400&ecc=Q');
    expect(second.rawPayload.equals(first.rawPayload)).toBe(true);
    expect((await qr(alice, link, 'format=png&size=400&ecc=L')).rawPayload.equals(first.rawPayload)).toBe(false);
  });

  it('draws an image once however often and however concurrently it is asked for, and again after a change of slug', async () => {
    const renderer = createQrRenderer();
    try {
      const request = { text: 'https://alice.links.example.com/spring-sale', format: 'png', size: 512, margin: 4, ecc: 'H' } as const;
      const concurrent = await Promise.all(Array.from({ length: 8 }, () => renderer.render(request)));
      const later = await renderer.render(request);
      expect(renderer.counts()).toEqual({ drawn: 1, reused: 8 });
      for (const image of [...concurrent, later]) expect(Buffer.compare(image as Buffer, concurrent[0] as Buffer)).toBe(0);
      expect(await zbar(later as Buffer)).toBe(request.text);
      // The cache is keyed by the short URL itself: a renamed link is drawn anew.
      const renamed = await renderer.render({ ...request, text: 'https://alice.links.example.com/summer-sale' });
      expect(await zbar(renamed as Buffer)).toBe('https://alice.links.example.com/summer-sale');
      expect(renderer.counts().drawn).toBe(2);
    } finally {
      await renderer.close();
    }
  });

  it('keeps at most its byte budget, dropping the least recently used', async () => {
    const renderer = createQrRenderer({ cacheBytes: 4_000 });
    try {
      const request = { text: 'https://alice.links.example.com/a', format: 'svg', margin: 4, ecc: 'M' } as const;
      // Each SVG is some 2 kB: the budget holds one of these two, not both.
      const first = await renderer.render({ ...request, size: 300 });
      expect(String(first).length).toBeGreaterThan(2_000);
      await renderer.render({ ...request, size: 301 });
      await renderer.render({ ...request, size: 300 });
      expect(renderer.counts()).toEqual({ drawn: 3, reused: 0 });
    } finally {
      await renderer.close();
    }
  });
});

describe('renders off the event loop', () => {
  it('draws PNG codes off the event loop: 24 large ones at once cost this thread a few milliseconds each, not the drawing', async () => {
    // An app whose guard admits all 24 at once: what is measured is where the renders run.
    const generous = createInFlightGuard({ qr_png: { max: 100, retryAfterSec: 1 }, export: IN_FLIGHT_LIMITS.export });
    const { app: other } = await buildApp(context, { inFlight: generous });
    try {
      const owner = await createOwner(context, other);
      const subdomain = await claimSubdomain(other, owner);
      const created = await other.inject({
        method: 'POST',
        url: '/api/v1/links',
        headers: owner.auth,
        payload: { subdomain, target_url: 'https://example.com/qr', slug: `c${'d'.repeat(63)}` },
      });
      const link = created.json().data as Link;
      // A first render starts the pool's threads: not part of the measure.
      expect((await qr(owner, link, 'format=png&size=1024&ecc=H&margin=0', other)).statusCode).toBe(200);
      const before = performance.eventLoopUtilization();
      const answers = await Promise.all(Array.from({ length: 24 }, (_, i) => qr(owner, link, `format=png&size=${1001 + i}&ecc=H&margin=1`, other)));
      const { active } = performance.eventLoopUtilization(before);
      expect(answers.map((answer) => answer.statusCode)).toEqual(Array(24).fill(200));
      // The time this thread's event loop was busy, per image: the request's own handling (a few ms)
      // when the pool draws it, the drawing too (about 70 ms and more for this size) when it does not.
      // A generous bound, as the machine may be shared: it tells where the work runs, not how fast.
      expect(active / answers.length).toBeLessThan(30);
    } finally {
      await other.close();
    }
  });
});
