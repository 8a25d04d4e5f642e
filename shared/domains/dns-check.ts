import { Resolver } from 'node:dns/promises';

/** The label under a custom domain whose TXT record proves control of it. */
export const CHALLENGE_LABEL = '_linktrack-challenge';
/** What the TXT record holds, before the domain's token. */
const VALUE_PREFIX = 'linktrack-verify=';
/** How long one DNS query may take, and how many times it is tried. */
const QUERY_TIMEOUT_MS = 3_000;
const QUERY_TRIES = 2;

/** The TXT record to create: its name and value. */
export const challengeOf = (domain: string, token: string) => ({
  type: 'TXT' as const,
  name: `${CHALLENGE_LABEL}.${domain}`,
  value: `${VALUE_PREFIX}${token}`,
});

/** What a TXT check found: the record, or why not (no record, other values only, or the DNS did not answer). */
export type TxtCheck = { ok: true } | { ok: false; reason: 'missing' | 'mismatch' | 'dns_error'; message: string };

/** DNS error codes that mean "no such record" rather than "could not ask". */
const NO_RECORD = new Set(['ENOTFOUND', 'ENODATA', 'NXDOMAIN']);

/**
 * A checker of challenge records through the given resolvers (`ip` or `ip:port`; none: the
 * system's). One resolver instance, so one socket pool; each check is one TXT query.
 */
export function txtChecker(servers: readonly string[]): (domain: string, token: string) => Promise<TxtCheck> {
  const resolver = new Resolver({ timeout: QUERY_TIMEOUT_MS, tries: QUERY_TRIES });
  if (servers.length > 0) resolver.setServers([...servers]);
  return async (domain, token) => {
    const { name, value } = challengeOf(domain, token);
    let records: string[][];
    try {
      records = await resolver.resolveTxt(name);
    } catch (error) {
      const code = (error as { code?: string }).code ?? 'EUNKNOWN';
      if (NO_RECORD.has(code)) return { ok: false, reason: 'missing', message: `no TXT record at ${name}` };
      return { ok: false, reason: 'dns_error', message: `the DNS lookup of ${name} failed (${code})` };
    }
    // A long TXT value comes in chunks of at most 255 bytes: a record is their concatenation.
    const values = records.map((chunks) => chunks.join(''));
    if (values.some((found) => found.trim() === value)) return { ok: true };
    if (!values.some((found) => found.startsWith(VALUE_PREFIX))) return { ok: false, reason: 'missing', message: `no ${VALUE_PREFIX}… TXT record at ${name}` };
    return { ok: false, reason: 'mismatch', message: `the TXT record at ${name} holds another token` };
  };
}
