import { Resvg } from '@resvg/resvg-js';
import type { FastifyInstance } from 'fastify';
import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { closeContext, createTestContext } from '#tests/support/context.js';
import { claimSubdomain, createOwner, type TestOwner } from '#tests/support/owners.js';
import { createTeam, joinTeam } from '#tests/support/teams.js';
import { zbarReader } from '#tests/support/zbar.js';
import { buildApp } from '#services/app.js';

// Issue 40 item 8, the QR code's centre logo: uploads checked and normalised (PNG and JPEG; SVG,
// garbage, tiny, huge and oversized ones refused), and every code drawn with the logo, in PNG and
// SVG, at several sizes, margins and colours, read back by zbarimg as the exact short URL.

let context: Context;
let app: FastifyInstance;
let alice: TestOwner;
let bob: TestOwner;
let aliceSub: string;
let bobSub: string;
const zbarimg = zbarReader();
const zbar = (png: Buffer) => zbarimg.read(png);

beforeAll(async () => {
  context = await createTestContext();
  ({ app } = await buildApp(context));
  [alice, bob] = await Promise.all([createOwner(context, app), createOwner(context, app)]);
  [aliceSub, bobSub] = await Promise.all([claimSubdomain(app, alice), claimSubdomain(app, bob)]);
});

afterAll(async () => {
  await app?.close();
  await closeContext(context);
  zbarimg.close();
});

type Json = Record<string, any>;

/** A square PNG logo: a red disc on transparency, with a white ring (what brand marks look like). */
function pngLogo(side: number): Buffer {
  const png = new PNG({ width: side, height: side });
  const centre = (side - 1) / 2;
  for (let y = 0; y < side; y++) {
    for (let x = 0; x < side; x++) {
      const o = (y * side + x) * 4;
      const r = Math.hypot(x - centre, y - centre) / (side / 2);
      const inside = r <= 1;
      png.data[o] = r < 0.8 ? 220 : 255;
      png.data[o + 1] = r < 0.8 ? 20 : 255;
      png.data[o + 2] = r < 0.8 ? 60 : 255;
      png.data[o + 3] = inside ? 255 : 0;
    }
  }
  return PNG.sync.write(png);
}

function jpegLogo(width: number, height: number): Buffer {
  const data = Buffer.alloc(width * height * 4);
  for (let i = 0; i < width * height; i++) data.set([20, 90, 200, 255], i * 4);
  return jpeg.encode({ width, height, data }, 90).data;
}

const dataUrl = (type: string, bytes: Buffer) => `data:${type};base64,${bytes.toString('base64')}`;
const putLogo = (owner: TestOwner, subdomain: string, image: string) =>
  app.inject({ method: 'PUT', url: `/api/v1/subdomains/${subdomain}/qr-logo`, headers: owner.auth, payload: { image } });

async function createLink(owner: TestOwner, subdomain: string): Promise<Json> {
  const response = await app.inject({
    method: 'POST',
    url: '/api/v1/links',
    headers: owner.auth,
    payload: { subdomain, target_url: 'https://example.com/qr-logo' },
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json().data;
}
const qr = (owner: TestOwner, link: Json, query: string) => app.inject({ method: 'GET', url: `/api/v1/links/${link.id}/qr?${query}`, headers: owner.auth });

describe('the QR logo', () => {
  it('is set from a PNG, normalised (scaled to fit 256 px), read back as the stored PNG, and replaced by a JPEG', async () => {
    const set = await putLogo(alice, aliceSub, dataUrl('image/png', pngLogo(600)));
    expect(set.statusCode, set.body).toBe(200);
    expect(set.json().data).toMatchObject({ subdomain: aliceSub, width: 256, height: 256 });
    const read = await app.inject({ method: 'GET', url: `/api/v1/subdomains/${aliceSub}/qr-logo`, headers: alice.auth });
    expect(read.statusCode).toBe(200);
    expect(read.headers['content-type']).toBe('image/png');
    const stored = PNG.sync.read(read.rawPayload);
    expect([stored.width, stored.height]).toEqual([256, 256]);
    // Transparency kept: a corner is transparent, the centre red.
    expect(stored.data[3]).toBe(0);
    const mid = (128 * 256 + 128) * 4;
    expect([stored.data[mid], stored.data[mid + 1], stored.data[mid + 2], stored.data[mid + 3]]).toEqual([220, 20, 60, 255]);

    // A link's code changes with the logo (the renderer's cache is keyed by the logo's digest).
    const link = await createLink(alice, aliceSub);
    const before = (await qr(alice, link, 'format=png&logo=true')).rawPayload;
    const replaced = await putLogo(alice, aliceSub, dataUrl('image/jpeg', jpegLogo(640, 320)));
    expect(replaced.statusCode, replaced.body).toBe(200);
    expect(replaced.json().data).toMatchObject({ width: 256, height: 128 });
    expect(replaced.json().data.digest).not.toBe(set.json().data.digest);
    const after = (await qr(alice, link, 'format=png&logo=true')).rawPayload;
    expect(after.equals(before)).toBe(false);
    expect(await zbar(after)).toBe(link.short_url);
    // Back to the PNG for the codes below.
    expect((await putLogo(alice, aliceSub, dataUrl('image/png', pngLogo(600)))).statusCode).toBe(200);
  });

  it('every format, size, margin and colour pair with the logo scans with zbarimg as the exact short URL, the logo drawn in the centre', async () => {
    const link = await createLink(alice, aliceSub);
    const cases: { format: string; size: number; margin: number; colours: string }[] = [];
    for (const format of ['png', 'svg'])
      for (const size of [256, 512, 1024])
        for (const margin of [0, 4]) for (const colours of ['', '&fg=1a5fb4&bg=fff8e7']) cases.push({ format, size, margin, colours });
    // One request at a time (an account's PNG renders in flight are bounded), then zbarimg a few at a time.
    const drawn: { query: string; png: Buffer }[] = [];
    for (const { format, size, margin, colours } of cases) {
      const query = `format=${format}&size=${size}&margin=${margin}&logo=true${colours}`;
      const response = await qr(alice, link, query);
      expect(response.statusCode, `${query}: ${response.body.slice(0, 200)}`).toBe(200);
      let png: Buffer;
      if (format === 'svg') {
        expect(response.body).toContain('<image ');
        expect(response.body).toContain('href="data:image/png;base64,');
        png = Buffer.from(new Resvg(response.body, { background: 'white' }).render().asPng());
      } else {
        expect(response.headers['content-type']).toBe('image/png');
        png = response.rawPayload;
      }
      const image = PNG.sync.read(png);
      const centre = (Math.floor(image.height / 2) * image.width + Math.floor(image.width / 2)) * 4;
      // The logo's red, not a module's colour, is in the centre.
      expect([image.data[centre], image.data[centre + 1], image.data[centre + 2]], query).toEqual([220, 20, 60]);
      drawn.push({ query, png });
    }
    const results: { query: string; text: string | undefined }[] = [];
    for (let i = 0; i < drawn.length; i += 6)
      results.push(...(await Promise.all(drawn.slice(i, i + 6).map(async ({ query, png }) => ({ query, text: await zbar(png) })))));
    for (const { query, text } of results) expect(text, query).toBe(link.short_url);
  });

  it('draws at ecc H whatever ecc says (a larger least size), and a code without logo=true has none', async () => {
    const link = await createLink(alice, aliceSub);
    const plain = await qr(alice, link, 'format=svg&ecc=L');
    expect(plain.body).not.toContain('<image');
    const tiny = await qr(alice, link, 'format=png&size=64&margin=4&logo=true&ecc=L');
    expect(tiny.statusCode).toBe(422);
    expect(tiny.json().error.details.size).toMatch(/at least \d+/);
    const least = Number(/at least (\d+)/.exec(tiny.json().error.details.size)![1]);
    const withoutLogo = await qr(alice, link, `format=png&size=${least}&margin=4&ecc=L`);
    expect(withoutLogo.statusCode).toBe(200);
    const atLeast = await qr(alice, link, `format=png&size=${least}&margin=4&logo=true&ecc=L`);
    expect(atLeast.statusCode).toBe(200);
    expect(await zbar(atLeast.rawPayload)).toBe(link.short_url);
  });

  it('refuses what is no PNG or JPEG, SVG, a tiny or huge image, an oversized upload; nothing stored changes', async () => {
    const before = (await app.inject({ method: 'GET', url: `/api/v1/subdomains/${aliceSub}/qr-logo`, headers: alice.auth })).rawPayload;
    const refusedOn = async (image: string, status = 422) => {
      const response = await putLogo(alice, aliceSub, image);
      expect(response.statusCode, `${image.slice(0, 60)}: ${response.body}`).toBe(status);
      return response.json().error;
    };
    expect((await refusedOn('https://example.com/logo.png')).details.image).toContain('data URL');
    const svg = '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>';
    expect((await refusedOn(dataUrl('image/svg+xml', Buffer.from(svg)))).details.image).toContain('data URL');
    // An SVG sent as if it were a PNG: the bytes decide.
    expect((await refusedOn(dataUrl('image/png', Buffer.from(svg)))).details.image).toContain('not a PNG or JPEG');
    expect((await refusedOn(dataUrl('image/png', Buffer.concat([pngLogo(64).subarray(0, 40), Buffer.alloc(200, 7)])))).details.image).toContain(
      'not a PNG or JPEG',
    );
    expect((await refusedOn(dataUrl('image/png', pngLogo(8)))).details.image).toContain('too small');
    // A PNG that declares 5000 × 5000 pixels (a decompression bomb) is refused before it is inflated.
    const bomb = pngLogo(64);
    bomb.writeUInt32BE(5000, 16);
    bomb.writeUInt32BE(5000, 20);
    expect((await refusedOn(dataUrl('image/png', bomb))).details.image).toContain('too large');
    // A JPEG of 3000 × 10 pixels: wider than 2048.
    expect((await refusedOn(dataUrl('image/jpeg', jpegLogo(3000, 16)))).details.image).toContain('too large');
    // More than 256 KiB decoded: 413.
    const big = Buffer.concat([pngLogo(64), Buffer.alloc(300 * 1024, 1)]);
    expect((await refusedOn(dataUrl('image/png', big), 413)).code).toBe('payload_too_large');
    expect((await app.inject({ method: 'PUT', url: `/api/v1/subdomains/${aliceSub}/qr-logo`, headers: alice.auth, payload: {} })).statusCode).toBe(400);
    const after = (await app.inject({ method: 'GET', url: `/api/v1/subdomains/${aliceSub}/qr-logo`, headers: alice.auth })).rawPayload;
    expect(after.equals(before)).toBe(true);
  });

  it('belongs to its subdomain: another owner can neither set, read nor remove it; a subdomain without one answers 422 on logo; removed, it is gone', async () => {
    const image = dataUrl('image/png', pngLogo(64));
    for (const [method, payload] of [
      ['PUT', { image }],
      ['GET', undefined],
      ['DELETE', undefined],
    ] as const) {
      const response = await app.inject({ method, url: `/api/v1/subdomains/${aliceSub}/qr-logo`, headers: bob.auth, ...(payload ? { payload } : {}) });
      expect(response.statusCode, method).toBe(403);
      expect(response.json().error.code).toBe('not_owner');
    }
    // On a team's subdomain: an admin of the team may set it, an editor may not (but reads it).
    const origin = new URL(context.config.publicUrl).origin;
    const team = await createTeam(app, origin, bob);
    expect((await app.inject({ method: 'PUT', url: `/api/v1/subdomains/${bobSub}/team`, headers: bob.auth, payload: { team_id: team } })).statusCode).toBe(200);
    const [admin, editor] = await Promise.all([createOwner(context, app), createOwner(context, app)]);
    await joinTeam(app, origin, team, bob, admin, 'admin');
    await joinTeam(app, origin, team, bob, editor, 'editor');
    const byEditor = await putLogo(editor, bobSub, image);
    expect(byEditor.statusCode).toBe(403);
    expect(byEditor.json().error.details.reason).toBe('team_role_too_low');
    expect((await putLogo(admin, bobSub, image)).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: `/api/v1/subdomains/${bobSub}/qr-logo`, headers: editor.auth })).statusCode).toBe(200);
    expect((await app.inject({ method: 'DELETE', url: `/api/v1/subdomains/${bobSub}/qr-logo`, headers: admin.auth })).statusCode).toBe(200);

    const bobLink = await createLink(bob, bobSub);
    const none = await qr(bob, bobLink, 'logo=true');
    expect(none.statusCode).toBe(422);
    expect(none.json().error.details.logo).toContain('needs a logo');
    expect((await app.inject({ method: 'GET', url: `/api/v1/subdomains/${bobSub}/qr-logo`, headers: bob.auth })).statusCode).toBe(404);

    const link = await createLink(alice, aliceSub);
    expect((await qr(alice, link, 'logo=true')).statusCode).toBe(200);
    const removed = await app.inject({ method: 'DELETE', url: `/api/v1/subdomains/${aliceSub}/qr-logo`, headers: alice.auth });
    expect(removed.statusCode).toBe(200);
    expect(removed.json().data).toEqual({ subdomain: aliceSub, removed: true });
    expect((await qr(alice, link, 'logo=true')).statusCode).toBe(422);
    expect((await app.inject({ method: 'DELETE', url: `/api/v1/subdomains/${aliceSub}/qr-logo`, headers: alice.auth })).statusCode).toBe(404);
    const audit = await app.inject({ method: 'GET', url: '/api/v1/me/audit?limit=100', headers: { cookie: alice.cookie } });
    const actions = (audit.json().data.entries ?? audit.json().data.audit ?? []).map((entry: Json) => entry.action);
    expect(actions).toEqual(expect.arrayContaining(['subdomain.qr_logo_set', 'subdomain.qr_logo_removed']));
  });
});
