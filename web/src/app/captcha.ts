// The sign-in's CAPTCHA: with ENABLE_CAPTCHA, a 403 `captcha_required` carries an ALTCHA
// proof-of-work challenge that the browser solves (altcha-lib, Web Crypto) and sends with the next
// attempt, of either step of a sign-in. The challenge is self-hosted: nothing leaves for a third party.
import { solveChallenge } from 'altcha-lib';

export interface CaptchaChallenge {
  algorithm: string;
  challenge: string;
  maxnumber?: number;
  salt: string;
  signature: string;
}

/** Solves an ALTCHA challenge into the base64 payload a sign-in takes as `captcha`. */
export async function solveCaptcha(challenge: CaptchaChallenge): Promise<string> {
  const solution = await solveChallenge(challenge.challenge, challenge.salt, challenge.algorithm, challenge.maxnumber).promise;
  if (!solution) throw new Error('no solution');
  return btoa(
    JSON.stringify({
      algorithm: challenge.algorithm,
      challenge: challenge.challenge,
      number: solution.number,
      salt: challenge.salt,
      signature: challenge.signature,
    }),
  );
}
