import { hash } from 'node:crypto';

/**
 * The visitor hash: SHA-256 of the day's random salt, the address and the user agent (truncated
 * to 128 bits). Without the salt, which the enricher deletes after two days, the hash tells nothing
 * about the address; the same visitor gets another hash the next day (uniques are per day).
 */
export function visitorHash(salt: string, ip: string, userAgent: string): string {
  return hash('sha256', `${salt}\n${ip}\n${userAgent}`, 'hex').slice(0, 32);
}
