// A render thread of the QR pool (qr.ts): Piscina calls the default export with each task.
import { type QrImage, type QrRequest, qrImage } from './qr-image.js';

/** Renders one QR image in this thread. */
export default function render(request: QrRequest): QrImage {
  return qrImage(request);
}
