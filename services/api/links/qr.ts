import { availableParallelism } from 'node:os';
import { LRUCache } from 'lru-cache';
import { Piscina } from 'piscina';
import { AppError, retryLater } from '#shared/errors.js';
import { RENDERER_BUSY_REASON } from '#shared/http/in-flight.js';
import { rule } from '#shared/i18n/index.js';
import { MIN_MODULE_PX, type QrImage, type QrRequest } from './qr-image.js';
import type { NormalizedLogo } from './qr-logo.js';

/** Bytes of rendered images kept (least recently used dropped first): a 1024 px PNG is a few kB, an SVG a few tens. */
export const QR_CACHE_BYTES = 16 * 1024 * 1024;
/** Renders waiting for a thread before new ones are refused (429): a render takes milliseconds, so this is well under a second of work. */
export const QR_MAX_QUEUE = 64;
/** Render threads: one, or two where there are cores to spare; the event loop keeps a core. */
export const QR_THREADS = Math.max(1, Math.min(2, availableParallelism() - 1));
/** How much lower than the process a render thread's scheduling priority is. */
const RENDER_NICENESS = 10;
/** Seconds an idle render thread lives: a process that draws no codes holds no thread. */
const IDLE_SEC = 60;

/** Renders QR images off the event loop, once per text and parameters. */
export interface QrRenderer {
  /**
   * The image, from the cache or rendered by a pool thread (concurrent requests for the same image
   * share one render). Throws 422 `validation_error` on `size` when the image would be too small for
   * whole modules of MIN_MODULE_PX, or a PNG too large; 429 `rate_limited` when the queue is full.
   */
  render(request: QrRequest): Promise<Buffer | string>;
  /** Checks and normalises an uploaded logo in a pool thread. */
  normalizeLogo(upload: Uint8Array): Promise<NormalizedLogo>;
  /** Images drawn by the pool so far, and answers taken from the cache or from a render already under way. */
  counts(): { drawn: number; reused: number };
  /** Stops the render threads. */
  close(): Promise<void>;
}

const keyOf = (request: QrRequest) =>
  `${request.format}|${request.size}|${request.margin}|${request.ecc}|${request.fg ?? ''}|${request.bg ?? ''}|${request.logo?.digest ?? ''}|${request.text}`;

// From the sources (Vitest, tsx), the worker is TypeScript and its thread loads tsx; built, it is the JavaScript beside this file.
const fromSource = import.meta.url.endsWith('.ts');
const WORKER = new URL(`./qr.worker.${fromSource ? 'ts' : 'js'}`, import.meta.url).href;

/** A renderer with its own thread pool (started on first use) and cache. */
export function createQrRenderer(options: { threads?: number; cacheBytes?: number; maxQueue?: number } = {}): QrRenderer {
  const threads = options.threads ?? QR_THREADS;
  const cache = new LRUCache<string, Buffer | string>({
    maxSize: options.cacheBytes ?? QR_CACHE_BYTES,
    sizeCalculation: (image) => Math.max(1, typeof image === 'string' ? image.length : image.byteLength),
  });
  const rendering = new Map<string, Promise<Buffer | string>>();
  const counted = { drawn: 0, reused: 0 };
  let pool: Piscina<QrRequest | Uint8Array, QrImage | NormalizedLogo> | undefined;
  const poolOf = () =>
    (pool ??= new Piscina<QrRequest | Uint8Array, QrImage | NormalizedLogo>({
      filename: WORKER,
      minThreads: 0,
      maxThreads: threads,
      idleTimeout: IDLE_SEC * 1000,
      maxQueue: options.maxQueue ?? QR_MAX_QUEUE,
      execArgv: fromSource ? ['--import', 'tsx'] : [],
      // Render threads run at a lower priority (nice +10, Linux and macOS through @napi-rs/nice): on a
      // busy machine the event loop, which answers redirects and health, gets the cores first.
      niceIncrement: RENDER_NICENESS,
    }));

  const renderOnce = async (request: QrRequest, key: string): Promise<Buffer | string> => {
    let image: QrImage;
    try {
      image = (await poolOf().run(request)) as QrImage;
    } catch (error) {
      // Piscina refuses a task when its queue is full: the renderer is saturated, come back in a second.
      if (error instanceof Error && /queue is at limit/i.test(error.message)) throw retryLater('rate_limited', 1, { reason: RENDERER_BUSY_REASON });
      throw error;
    }
    counted.drawn += 1;
    if (!image.ok) throw new AppError('validation_error', { size: rule('qr_module_size', { min: image.minSize, px: MIN_MODULE_PX }) });
    // A structured clone of a Buffer arrives as a plain Uint8Array.
    const body = typeof image.body === 'string' ? image.body : Buffer.from(image.body.buffer, image.body.byteOffset, image.body.byteLength);
    cache.set(key, body);
    return body;
  };

  return {
    render(request) {
      const key = keyOf(request);
      const hit = cache.get(key);
      let pending = hit === undefined ? rendering.get(key) : Promise.resolve(hit);
      if (pending) {
        counted.reused += 1;
        return pending;
      }
      pending = renderOnce(request, key).finally(() => rendering.delete(key));
      rendering.set(key, pending);
      return pending;
    },
    async normalizeLogo(upload) {
      try {
        const normalized = (await poolOf().run(upload, { name: 'normalize' })) as NormalizedLogo;
        // A structured clone of a Buffer arrives as a plain Uint8Array.
        return normalized.ok ? { ...normalized, png: Buffer.from(normalized.png.buffer, normalized.png.byteOffset, normalized.png.byteLength) } : normalized;
      } catch (error) {
        if (error instanceof Error && /queue is at limit/i.test(error.message)) throw retryLater('rate_limited', 1, { reason: RENDERER_BUSY_REASON });
        throw error;
      }
    },
    counts: () => ({ ...counted }),
    async close() {
      await pool?.destroy();
      pool = undefined;
    },
  };
}
