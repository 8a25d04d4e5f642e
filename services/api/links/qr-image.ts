import { crc32, deflateSync } from 'node:zlib';
import QRCode from 'qrcode';
import { QR_DEFAULT_BG, QR_DEFAULT_FG } from '#shared/links/qr-colours.js';
import { logoBox, logoPixels } from './qr-logo.js';

export const QR_FORMATS = ['svg', 'png'] as const;
export type QrFormat = (typeof QR_FORMATS)[number];
export const QR_ECC_LEVELS = ['L', 'M', 'Q', 'H'] as const;
export type QrEcc = (typeof QR_ECC_LEVELS)[number];

/** What a QR image is asked for: the text it encodes and how it is drawn. */
export interface QrRequest {
  text: string;
  format: QrFormat;
  /** Width and height of the image in pixels. */
  size: number;
  /** Quiet zone around the symbol, in modules. */
  margin: number;
  ecc: QrEcc;
  /** Colours of the dark modules and of the light background, `rrggbb` (lower case, no `#`); black on white when absent. */
  fg?: string;
  bg?: string;
  /** A logo for the centre (its subdomain's, normalised PNG; `digest` names its version). The code is then drawn at ecc H. */
  logo?: { png: Uint8Array; digest: string };
}

/**
 * What keeps every image we answer scannable: each module is a whole number of pixels, at least
 * MIN_MODULE_PX. The images that did not scan (zbarimg, 64 px) had fractional modules (1.6 to 2.2 px,
 * drawn at uneven widths); with whole modules of 2 px or more, zbarimg and jsQR read
 * every size, margin (0 included: the leftover pixels and a light page are its quiet zone) and ecc.
 */
export const MIN_MODULE_PX = 2;
export const MAX_QR_MARGIN = 16;
export const MIN_QR_SIZE = 64;
/**
 * The cap v1 always had, for SVG (whose `size` is only its nominal width) and PNG alike: lowering it
 * would break clients that ask for it, and a 1-bit PNG of 2048 px drawn off the event loop costs a few
 * milliseconds of a worker thread. It still bounds each render's memory and time.
 */
export const MAX_QR_SIZE = 2048;

/** An image, or the smallest `size` at which the symbol would fit at MIN_MODULE_PX (too small as asked). */
export type QrImage = { ok: true; body: Buffer | string } | { ok: false; minSize: number };

/** The geometry of a symbol in an image of `size` pixels: whole-pixel modules, the symbol centred. */
function layout(modules: number, size: number, margin: number): { scale: number; offset: number } | { minSize: number } {
  const span = modules + 2 * margin;
  const scale = Math.floor(size / span);
  if (scale < MIN_MODULE_PX) return { minSize: span * MIN_MODULE_PX };
  // What whole modules leave over widens the quiet zone, split evenly: the image is exactly `size`.
  return { scale, offset: Math.floor((size - modules * scale) / 2) };
}

/** Renders a QR code as SVG or PNG. Pure and synchronous: the worker pool (qr.ts) runs it off the event loop. */
export function qrImage(request: QrRequest): QrImage {
  const symbol = QRCode.create(request.text, { errorCorrectionLevel: request.ecc });
  const modules = symbol.modules.size;
  const placed = layout(modules, request.size, request.margin);
  if ('minSize' in placed) return { ok: false, minSize: placed.minSize };
  const colours = { fg: request.fg ?? QR_DEFAULT_FG, bg: request.bg ?? QR_DEFAULT_BG };
  if (request.logo) return { ok: true, body: withLogo(request, symbol.modules, placed, colours, request.logo.png) };
  const dark = (row: number, column: number) => symbol.modules.get(row, column) === 1;
  const body =
    request.format === 'png'
      ? pngOf(dark, modules, request.size, placed.scale, placed.offset, colours)
      : svgOf(dark, modules, request.size, placed.scale, placed.offset, colours);
  return { ok: true, body };
}

/**
 * A code with the logo in its centre: the modules under the logo's box are left out (background),
 * the logo drawn inside the box with a module of padding. SVG embeds the stored PNG (a data: URL);
 * PNG is truecolour, the logo composited over the background by its alpha.
 */
function withLogo(
  request: QrRequest,
  symbol: { size: number; get(row: number, column: number): number },
  placed: { scale: number; offset: number },
  colours: { fg: string; bg: string },
  logo: Uint8Array,
): Buffer | string {
  const modules = symbol.size;
  const { scale, offset } = placed;
  const box = logoBox(modules);
  const hidden = (index: number) => index >= box.start && index < box.start + box.span;
  const dark = (row: number, column: number) => !(hidden(row) && hidden(column)) && symbol.get(row, column) === 1;
  const inner = { at: offset + (box.start + 1) * scale, px: (box.span - 2) * scale };
  if (request.format === 'svg') {
    const svg = svgOf(dark, modules, request.size, scale, offset, colours);
    const image =
      `<image x="${inner.at}" y="${inner.at}" width="${inner.px}" height="${inner.px}" preserveAspectRatio="xMidYMid meet" ` +
      `href="data:image/png;base64,${Buffer.from(logo.buffer, logo.byteOffset, logo.byteLength).toString('base64')}"/>`;
    return svg.replace('</svg>', `${image}</svg>`);
  }
  const size = request.size;
  const stride = 1 + size * 3;
  const raw = Buffer.alloc(stride * size);
  const fg = Buffer.from(colours.fg, 'hex');
  const bg = Buffer.from(colours.bg, 'hex');
  for (let y = 0; y < size; y++) {
    raw[y * stride] = 0;
    for (let x = 0; x < size; x++) bg.copy(raw, y * stride + 1 + x * 3);
  }
  for (let row = 0; row < modules; row++) {
    for (let column = 0; column < modules; column++) {
      if (!dark(row, column)) continue;
      for (let y = offset + row * scale; y < offset + (row + 1) * scale; y++) {
        for (let x = offset + column * scale; x < offset + (column + 1) * scale; x++) fg.copy(raw, y * stride + 1 + x * 3);
      }
    }
  }
  const pixels = logoPixels(logo, inner.px);
  for (let y = 0; y < pixels.height; y++) {
    for (let x = 0; x < pixels.width; x++) {
      const from = (y * pixels.width + x) * 4;
      const alpha = pixels.data[from + 3]! / 255;
      const at = (inner.at + pixels.top + y) * stride + 1 + (inner.at + pixels.left + x) * 3;
      for (let channel = 0; channel < 3; channel++) raw[at + channel] = Math.round(pixels.data[from + channel]! * alpha + bg[channel]! * (1 - alpha));
    }
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // truecolour
  return Buffer.concat([PNG_SIGNATURE, chunk('IHDR', header), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

/**
 * An SVG in pixel units: each run of dark modules in a row is one rectangle of the path, at whole
 * pixels, so a rasteriser at the nominal size draws the same crisp modules as the PNG.
 */
function svgOf(
  dark: (row: number, column: number) => boolean,
  modules: number,
  size: number,
  scale: number,
  offset: number,
  colours: { fg: string; bg: string },
): string {
  let path = '';
  for (let row = 0; row < modules; row++) {
    let column = 0;
    while (column < modules) {
      if (!dark(row, column)) {
        column += 1;
        continue;
      }
      const start = column;
      while (column < modules && dark(row, column)) column += 1;
      path += `M${offset + start * scale} ${offset + row * scale}h${(column - start) * scale}v${scale}h-${(column - start) * scale}z`;
    }
  }
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${size}" height="${size}" viewBox="0 0 ${size} ${size}" shape-rendering="crispEdges">` +
    `<rect width="${size}" height="${size}" fill="#${colours.bg}"/><path fill="#${colours.fg}" d="${path}"/></svg>\n`
  );
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** One PNG chunk: length, type, data, CRC-32 of type and data. */
function chunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(data, crc32(head.subarray(4))), 0);
  return Buffer.concat([head, data, crc]);
}

/**
 * A 1-bit PNG: 1/32 of the bytes of an RGBA image, so a 1024 px code is about 128 kB to deflate, a few
 * milliseconds. Black on white is greyscale (bit 0 black, 1 white); other colours are a two-entry
 * palette (index 0 the modules, 1 the background), the same bits. Each module row is built once and
 * repeated `scale` times.
 */
function pngOf(
  dark: (row: number, column: number) => boolean,
  modules: number,
  size: number,
  scale: number,
  offset: number,
  colours: { fg: string; bg: string },
): Buffer {
  const stride = 1 + Math.ceil(size / 8); // filter byte (0, none) + the row's bits
  const raw = Buffer.alloc(stride * size, 0xff); // all white; the filter bytes are set to 0 below
  for (let y = 0; y < size; y++) raw[y * stride] = 0;
  const line = Buffer.alloc(stride);
  for (let row = 0; row < modules; row++) {
    line.fill(0xff);
    line[0] = 0;
    for (let column = 0; column < modules; column++) {
      if (!dark(row, column)) continue;
      for (let x = offset + column * scale, end = x + scale; x < end; x++) line[1 + (x >> 3)]! &= ~(0x80 >> (x & 7));
    }
    for (let y = offset + row * scale, end = y + scale; y < end; y++) line.copy(raw, y * stride);
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header[8] = 1; // bit depth
  const greyscale = colours.fg === QR_DEFAULT_FG && colours.bg === QR_DEFAULT_BG;
  header[9] = greyscale ? 0 : 3; // greyscale, or indexed colour
  // compression, filter and interlace methods: 0
  const palette = greyscale ? [] : [chunk('PLTE', Buffer.from(colours.fg + colours.bg, 'hex'))];
  return Buffer.concat([PNG_SIGNATURE, chunk('IHDR', header), ...palette, chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}
