import { isIP } from 'node:net';

/** One DNS label: letters, digits and inner hyphens, 1–63 characters (punycode `xn--` labels included). */
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** Why a name cannot be a custom domain (a rule key of the validation error). */
export type DomainNameProblem = 'hostname' | 'ip_address' | 'platform_domain';

/**
 * A custom domain as stored: lower case, without a trailing dot. Refuses what is not a host name of
 * at least two labels with a non-numeric top label, an IP address, and any name that is or lies under
 * BASE_DOMAIN or the API's host (those are the platform's own).
 */
export function normalizeDomain(input: string, platform: { baseDomain: string; apiHost: string }): { domain: string } | { problem: DomainNameProblem } {
  let domain = input.trim().toLowerCase();
  if (domain.endsWith('.')) domain = domain.slice(0, -1);
  if (isIP(domain) !== 0 || isIP(domain.replace(/^\[|\]$/g, '')) !== 0) return { problem: 'ip_address' };
  const labels = domain.split('.');
  if (domain.length > 253 || labels.length < 2 || !labels.every((label) => LABEL.test(label)) || /^\d+$/.test(labels.at(-1)!)) return { problem: 'hostname' };
  for (const own of [platform.baseDomain.toLowerCase(), platform.apiHost.toLowerCase()]) {
    if (domain === own || domain.endsWith(`.${own}`) || own.endsWith(`.${domain}`)) return { problem: 'platform_domain' };
  }
  return { domain };
}
