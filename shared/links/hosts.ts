/** What a subdomain label of a short host looks like (3–63 characters of a-z, 0-9 and inner hyphens). */
export const SUBDOMAIN_LABEL = /^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/;
/** A subdomain name as a filter takes it: either case (compared in lower case). */
export const SUBDOMAIN_NAME_ANY_CASE = /^[A-Za-z0-9][A-Za-z0-9-]{1,61}[A-Za-z0-9]$/;

/**
 * The subdomain of a short host name (`alice` of `alice.links.example.com`), or undefined; the
 * matcher of one base domain, made once for the per-request path.
 */
export function subdomainMatcher(baseDomain: string): (hostname: string) => string | undefined {
  const suffix = `.${baseDomain}`;
  return (hostname) => {
    let host = hostname.toLowerCase();
    if (host.endsWith('.')) host = host.slice(0, -1);
    if (!host.endsWith(suffix)) return undefined;
    const label = host.slice(0, -suffix.length);
    return SUBDOMAIN_LABEL.test(label) ? label : undefined;
  };
}

/**
 * The subdomain of a short host name, leaving out the API's own host when that is itself a name
 * under BASE_DOMAIN (`api.links.example.com`): what routes a request to a subdomain's edge.
 */
export function shortHostMatcher(config: { baseDomain: string; publicUrl: string }): (hostname: string) => string | undefined {
  const subdomainOf = subdomainMatcher(config.baseDomain);
  const apiLabel = subdomainOf(new URL(config.publicUrl).hostname);
  return (hostname) => {
    const subdomain = subdomainOf(hostname);
    return subdomain === apiLabel ? undefined : subdomain;
  };
}
