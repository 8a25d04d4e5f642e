// Issue 40 item 8: a centre logo in QR codes. An uploaded PNG or JPEG is checked and normalised here
// (decoded with pngjs or jpeg-js, scaled to fit LOGO_MAX_PX, stored as a PNG), and drawn into the
// centre of a code: a quiet box of the background colour one module wider than the logo on each
// side, at most LOGO_SPAN of the symbol's width, while the code is drawn at error correction H,
// whose 30 % redundancy restores the modules the box hides. Pure and synchronous: the QR worker
// pool runs it, off the event loop.
import { createHash } from 'node:crypto';
import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';

/** Largest upload, in bytes (decoded, the image is bounded by LOGO_MAX_INPUT_PX too). */
export const LOGO_MAX_BYTES = 256 * 1024;
/** Largest width or height of an uploaded image: a small file may declare a huge one (a decompression bomb). */
export const LOGO_MAX_INPUT_PX = 2048;
/** Smallest width and height of an uploaded image. */
export const LOGO_MIN_INPUT_PX = 16;
/** The stored logo fits in this square (it is drawn at most a fifth of a 2048 px code). */
export const LOGO_MAX_PX = 256;
/** Share of the symbol's width (in modules) the logo's box may take, padding included. */
export const LOGO_SPAN = 0.24;

/** A stored logo: a PNG, its size, and a digest that names this version (the QR cache's key). */
export interface StoredLogo {
  png: Uint8Array;
  width: number;
  height: number;
  digest: string;
}

export type LogoProblem = 'not_an_image' | 'too_large' | 'too_small';
export type NormalizedLogo = ({ ok: true } & StoredLogo) | { ok: false; problem: LogoProblem };

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

interface Rgba {
  width: number;
  height: number;
  data: Uint8Array;
}

/** Decodes an upload whose bytes start as a PNG or a JPEG (the bytes decide, not the name); undefined when it is neither or does not decode. */
function decode(bytes: Buffer): Rgba | LogoProblem {
  if (bytes.length > 24 && bytes.subarray(0, 8).equals(PNG_SIGNATURE)) {
    // IHDR comes first: its width and height are read before anything is inflated.
    const width = bytes.readUInt32BE(16);
    const height = bytes.readUInt32BE(20);
    if (width > LOGO_MAX_INPUT_PX || height > LOGO_MAX_INPUT_PX) return 'too_large';
    try {
      const png = PNG.sync.read(bytes);
      return { width: png.width, height: png.height, data: png.data };
    } catch {
      return 'not_an_image';
    }
  }
  if (bytes.length > 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) {
    try {
      const image = jpeg.decode(bytes, {
        useTArray: true,
        formatAsRGBA: true,
        maxResolutionInMP: (LOGO_MAX_INPUT_PX * LOGO_MAX_INPUT_PX) / 1_000_000,
        maxMemoryUsageInMB: 64,
      });
      if (image.width > LOGO_MAX_INPUT_PX || image.height > LOGO_MAX_INPUT_PX) return 'too_large';
      return { width: image.width, height: image.height, data: image.data };
    } catch (error) {
      return /maxResolutionInMP|maxMemoryUsageInMB/.test(String(error)) ? 'too_large' : 'not_an_image';
    }
  }
  return 'not_an_image';
}

/** Scales an image down to fit `box` × `box` (area average: every source pixel counts), keeping its aspect. */
function fit(image: Rgba, box: number): Rgba {
  const ratio = Math.min(1, box / Math.max(image.width, image.height));
  const width = Math.max(1, Math.round(image.width * ratio));
  const height = Math.max(1, Math.round(image.height * ratio));
  if (width === image.width && height === image.height) return image;
  const data = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++) {
    const y0 = Math.floor((y * image.height) / height);
    const y1 = Math.max(y0 + 1, Math.floor(((y + 1) * image.height) / height));
    for (let x = 0; x < width; x++) {
      const x0 = Math.floor((x * image.width) / width);
      const x1 = Math.max(x0 + 1, Math.floor(((x + 1) * image.width) / width));
      // Premultiplied by alpha, so transparent pixels do not darken the edges.
      let r = 0;
      let g = 0;
      let b = 0;
      let a = 0;
      for (let sy = y0; sy < y1; sy++) {
        for (let sx = x0; sx < x1; sx++) {
          const o = (sy * image.width + sx) * 4;
          const alpha = image.data[o + 3]!;
          r += image.data[o]! * alpha;
          g += image.data[o + 1]! * alpha;
          b += image.data[o + 2]! * alpha;
          a += alpha;
        }
      }
      const n = (y1 - y0) * (x1 - x0);
      const o = (y * width + x) * 4;
      data[o] = a > 0 ? Math.round(r / a) : 0;
      data[o + 1] = a > 0 ? Math.round(g / a) : 0;
      data[o + 2] = a > 0 ? Math.round(b / a) : 0;
      data[o + 3] = Math.round(a / n);
    }
  }
  return { width, height, data };
}

/** Checks and normalises an upload into the stored logo: a PNG of at most LOGO_MAX_PX a side. */
export function normalizeLogo(upload: Uint8Array): NormalizedLogo {
  const bytes = Buffer.from(upload.buffer, upload.byteOffset, upload.byteLength);
  if (bytes.length > LOGO_MAX_BYTES) return { ok: false, problem: 'too_large' };
  const decoded = decode(bytes);
  if (typeof decoded === 'string') return { ok: false, problem: decoded };
  if (decoded.width < LOGO_MIN_INPUT_PX || decoded.height < LOGO_MIN_INPUT_PX) return { ok: false, problem: 'too_small' };
  const scaled = fit(decoded, LOGO_MAX_PX);
  const png = new PNG({ width: scaled.width, height: scaled.height });
  Buffer.from(scaled.data.buffer, scaled.data.byteOffset, scaled.data.byteLength).copy(png.data);
  const encoded = PNG.sync.write(png, { colorType: 6 });
  return { ok: true, png: encoded, width: scaled.width, height: scaled.height, digest: createHash('sha256').update(encoded).digest('hex').slice(0, 16) };
}

/** Where the logo goes in a code of `modules` modules: its box (in modules, centred, odd so that it is centred on a module). */
export function logoBox(modules: number): { start: number; span: number } {
  let span = Math.floor(modules * LOGO_SPAN);
  if (span % 2 === 0) span -= 1;
  span = Math.max(3, span);
  return { start: (modules - span) / 2, span };
}

/** The logo scaled into a square of `px` pixels (kept in aspect, centred), as RGBA: what the PNG composites. */
export function logoPixels(logo: Uint8Array, px: number): { width: number; height: number; left: number; top: number; data: Uint8Array } {
  const png = PNG.sync.read(Buffer.from(logo.buffer, logo.byteOffset, logo.byteLength));
  const scaled = fitUp({ width: png.width, height: png.height, data: png.data }, px);
  return { ...scaled, left: Math.floor((px - scaled.width) / 2), top: Math.floor((px - scaled.height) / 2) };
}

/** Scales an image to fit `box` (down by area average, up by nearest pixel). */
function fitUp(image: Rgba, box: number): Rgba {
  if (Math.max(image.width, image.height) >= box) return fit(image, box);
  const ratio = box / Math.max(image.width, image.height);
  const width = Math.max(1, Math.round(image.width * ratio));
  const height = Math.max(1, Math.round(image.height * ratio));
  const data = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++) {
    const sy = Math.min(image.height - 1, Math.floor(y / ratio));
    for (let x = 0; x < width; x++) {
      const sx = Math.min(image.width - 1, Math.floor(x / ratio));
      const from = (sy * image.width + sx) * 4;
      data.set(image.data.subarray(from, from + 4), (y * width + x) * 4);
    }
  }
  return { width, height, data };
}
