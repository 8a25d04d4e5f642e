import { randomBytes } from 'node:crypto';
import { createChallenge, verifySolution } from 'altcha-lib';
import type { Challenge } from 'altcha-lib/types';
import type { Cache } from '#shared/cache/cache.js';

/** Proof-of-work size: about 0.2–1 s of a browser's time, trivial for the server to check. */
const MAX_NUMBER = 100_000;
const CHALLENGE_TTL_SEC = 300;

export interface Captcha {
  challenge(): Promise<Challenge>;
  /** True when the payload solves a live challenge of ours that was not used before. */
  verify(payload: string): Promise<boolean>;
}

/**
 * Self-hosted proof-of-work CAPTCHA (ALTCHA): no third party sees the visitor. Challenges are
 * HMAC-signed (CAPTCHA_SECRET, shared by all API nodes) and expire after five minutes; a solved
 * challenge is accepted once (its signature is remembered in the shared cache until it expires).
 */
export function createCaptcha(cache: Cache, secret: string | undefined): Captcha {
  const hmacKey = secret ?? randomBytes(32).toString('hex');
  return {
    challenge: () => createChallenge({ hmacKey, maxNumber: MAX_NUMBER, expires: new Date(Date.now() + CHALLENGE_TTL_SEC * 1000) }),
    async verify(payload) {
      let valid: boolean;
      try {
        valid = await verifySolution(payload, hmacKey, true);
      } catch {
        return false;
      }
      if (!valid) return false;
      const { signature } = JSON.parse(Buffer.from(payload, 'base64').toString('utf8')) as { signature: string };
      const replayKey = `captcha:used:${signature}`;
      // Each solution is accepted once, atomically across nodes.
      return cache.flagIfAbsent(replayKey, CHALLENGE_TTL_SEC);
    },
  };
}
