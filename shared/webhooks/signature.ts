import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Webhook signatures: `X-Svc-Signature: sha256=<hex HMAC-SHA256 of the raw body with the secret>`.
 * This file is also the receivers' helper: it has no import but node:crypto, so it can be copied
 * into an integration as it is (docs/api.md, "Webhooks", shows how).
 */

/** The X-Svc-Signature value of a raw body. */
export function signBody(secret: string, rawBody: string | Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(rawBody).digest('hex')}`;
}

/**
 * True when `header` is the signature of `rawBody` under `secret`. Constant-time: the comparison
 * takes as long whatever bytes differ, and a header of the wrong length or form is refused before
 * comparing. Verify the raw bytes received, before any JSON parsing.
 */
export function verifySignature(secret: string, rawBody: string | Buffer, header: string | undefined | null): boolean {
  if (typeof header !== 'string' || !/^sha256=[0-9a-f]{64}$/.test(header)) return false;
  const expected = Buffer.from(signBody(secret, rawBody), 'latin1');
  const given = Buffer.from(header, 'latin1');
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/** How old a delivery may be (its signed `delivered_at`) before a receiver should refuse it as a replay. */
export const DELIVERY_TOLERANCE_MS = 5 * 60_000;

/**
 * Verifies a delivery as a receiver should: the signature first, then that the signed
 * `delivered_at` is within the tolerance of the receiver's clock (a replayed old delivery fails).
 * Returns the parsed body, or undefined when the delivery must be refused. Deduplicate what it
 * returns on the `X-Svc-Delivery` header: retries of one delivery carry the same id.
 */
export function verifyDelivery<T = unknown>(
  secret: string,
  rawBody: string | Buffer,
  signature: string | undefined | null,
  now = Date.now(),
  toleranceMs = DELIVERY_TOLERANCE_MS,
): (T & { event: string; delivered_at: string }) | undefined {
  if (!verifySignature(secret, rawBody, signature)) return undefined;
  let body: { delivered_at?: unknown };
  try {
    body = JSON.parse(rawBody.toString()) as { delivered_at?: unknown };
  } catch {
    return undefined;
  }
  const at = typeof body?.delivered_at === 'string' ? Date.parse(body.delivered_at) : NaN;
  if (!Number.isFinite(at) || Math.abs(now - at) > toleranceMs) return undefined;
  return body as T & { event: string; delivered_at: string };
}
