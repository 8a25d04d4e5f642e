/** What a subdomain label of a short host looks like (3–63 characters of a-z, 0-9 and inner hyphens). */
export const SUBDOMAIN_LABEL = /^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/;
/** The subdomain of a short host name (`alice` of `alice.links.example.com`), or undefined. */
export function subdomainOf(hostname, baseDomain) {
    const host = hostname.toLowerCase().replace(/\.$/, '');
    const suffix = `.${baseDomain}`;
    if (!host.endsWith(suffix))
        return undefined;
    const label = host.slice(0, -suffix.length);
    return SUBDOMAIN_LABEL.test(label) ? label : undefined;
}
//# sourceMappingURL=hosts.js.map