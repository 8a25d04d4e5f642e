import { randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const scrypt = (password: string, salt: Buffer, keylen: number, options: ScryptOptions) =>
  new Promise<Buffer>((resolve, reject) => scryptCallback(password, salt, keylen, options, (error, key) => (error ? reject(error) : resolve(key))));

/** scrypt cost: N = 2^15, r = 8 (32 MiB per hash), p = 1: memory-hard, ~50–100 ms on a server core. */
const PARAMS = { N: 2 ** 15, r: 8, p: 1, keylen: 32 } as const;

/** Hashes a password with scrypt; the result carries its parameters: `scrypt$N$r$p$salt$hash` (base64url). */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, PARAMS.keylen, { N: PARAMS.N, r: PARAMS.r, p: PARAMS.p, maxmem: 64 * 1024 * 1024 });
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** Checks a password against a stored hash in constant time. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !n || !r || !p || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const key = await scrypt(password, Buffer.from(salt, 'base64url'), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: 64 * 1024 * 1024,
  });
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/** A random password of 24 URL-safe characters (144 bits). */
export function generatePassword(): string {
  return randomBytes(18).toString('base64url');
}

/**
 * Lowest zxcvbn score a new password must reach: 3, "safely unguessable" (at least 10^8 guesses).
 * Below it are the passwords of the breached-password lists zxcvbn-ts ships and what a guesser
 * derives from them (appended digits, l33t, keyboard walks, sequences, repeats, the user's own
 * e-mail), as NIST SP 800-63B asks a verifier to refuse; no composition rule is added.
 */
export const MIN_PASSWORD_SCORE = 3;

type Strength = (password: string, userInputs: string[]) => number;
let strength: Promise<Strength> | undefined;

/**
 * zxcvbn-ts with its common dictionaries (some 30,000 breached passwords, diceware words), loaded
 * on the first password set rather than at start-up: about 6.4 MiB of heap (some 20 MiB of RSS) and
 * under 0.1 s once, then a few milliseconds a check. A process that never sets a password never loads it.
 */
function loadStrength(): Promise<Strength> {
  strength ??= (async () => {
    const [{ ZxcvbnFactory }, common] = await Promise.all([import('@zxcvbn-ts/core'), import('@zxcvbn-ts/language-common')]);
    // The first 64 characters are judged: enough to tell a common password. A check holds the event
    // loop a few milliseconds, up to some 0.1 s for 64 repetitive characters; only staff set passwords.
    const zxcvbn = new ZxcvbnFactory({ dictionary: { ...common.dictionary }, graphs: common.adjacencyGraphs, maxLength: 64 });
    return (password, userInputs) => zxcvbn.check(password, userInputs).score;
  })();
  strength.catch(() => (strength = undefined));
  return strength;
}

/** True when a new password is too common or too easy to guess (see MIN_PASSWORD_SCORE); `userInputs` are the account's own words (its e-mail). */
export async function isWeakPassword(password: string, userInputs: readonly string[] = []): Promise<boolean> {
  // The whole input, an e-mail's local part, and each word of it: the guesses a targeted attacker tries first.
  const inputs = userInputs
    .flatMap((input) => [input, input.split('@')[0]!, ...input.toLowerCase().split(/[^\p{L}\p{N}]+/u)])
    .filter((input) => input.length >= 3);
  return (await loadStrength())(password, inputs) < MIN_PASSWORD_SCORE;
}
