// A render thread of the QR pool (qr.ts): Piscina calls the default export with each task, or the named one.
import { type QrImage, type QrRequest, qrImage } from './qr-image.js';
import { normalizeLogo, type NormalizedLogo } from './qr-logo.js';

/** Renders one QR image in this thread. */
export default function render(request: QrRequest): QrImage {
  return qrImage(request);
}

/** Checks and normalises an uploaded logo in this thread (decoding an image is no work for the event loop). */
export function normalize(upload: Uint8Array): NormalizedLogo {
  return normalizeLogo(upload);
}
