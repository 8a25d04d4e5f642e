import ipaddr from 'ipaddr.js';
/**
 * Short URLs and target URLs. A short URL is `{scheme}://{subdomain}.{BASE_DOMAIN}{:port}/{slug}`,
 * scheme and port taken from PUBLIC_URL (the same listener serves both in one process).
 */
/** Longest target URL accepted, after normalisation. */
export const MAX_TARGET_URL_LENGTH = 2048;
/** PUBLIC_URL parsed once per value (short URLs are built for every row of a list). */
const parsedPublicUrls = new Map();
function publicUrlOf(publicUrl) {
    let parsed = parsedPublicUrls.get(publicUrl);
    if (!parsed)
        parsedPublicUrls.set(publicUrl, (parsed = new URL(publicUrl)));
    return parsed;
}
/** The short URL of a link. */
export function shortUrl(config, subdomain, slug) {
    const base = publicUrlOf(config.publicUrl);
    return `${base.protocol}//${subdomain}.${config.baseDomain}${base.port ? `:${base.port}` : ''}/${slug}`;
}
/**
 * Hosts that are the platform's own: the base domain and every subdomain of it, the API host, and
 * this machine (`localhost`, loopback and unspecified addresses, whatever the port).
 */
export function isPlatformHost(host, config) {
    const name = host.toLowerCase().replace(/\.$/, '').replace(/^\[(.*)\]$/, '$1');
    if (name === config.baseDomain || name.endsWith(`.${config.baseDomain}`) || name === publicUrlOf(config.publicUrl).hostname.replace(/^\[(.*)\]$/, '$1'))
        return true;
    if (name === 'localhost' || name.endsWith('.localhost'))
        return true;
    if (!ipaddr.isValid(name))
        return false;
    const range = ipaddr.process(name).range();
    return range === 'loopback' || range === 'unspecified';
}
/**
 * Normalises a target URL (WHATWG parsing: lower-case scheme and host, IDN to punycode, default
 * port dropped, path percent-encoded) and checks it: http or https only, no credentials, no
 * control characters or spaces, at most MAX_TARGET_URL_LENGTH characters, and never a host of the
 * platform itself (a short link to a short link loops or launders a target).
 */
export function checkTargetUrl(input, config) {
    const raw = input.trim();
    if (/[\u0000-\u001f\u007f\s]/.test(raw))
        return { ok: false, rule: 'must not contain spaces or control characters' };
    let url;
    try {
        url = new URL(raw);
    }
    catch {
        return { ok: false, rule: 'must be an absolute http or https URL' };
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
        return { ok: false, rule: 'must use http or https' };
    if (url.username || url.password)
        return { ok: false, rule: 'must not contain credentials (user:password@)' };
    if (!url.hostname)
        return { ok: false, rule: 'must name a host' };
    if (isPlatformHost(url.hostname, config))
        return { ok: false, rule: "must not point at the platform's own short hosts" };
    const normalized = url.href;
    if (normalized.length > MAX_TARGET_URL_LENGTH)
        return { ok: false, rule: `must be at most ${MAX_TARGET_URL_LENGTH} characters` };
    return { ok: true, url: normalized };
}
//# sourceMappingURL=urls.js.map