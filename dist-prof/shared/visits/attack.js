/** Paths scanners probe for: CMS admin pages, dotfiles, configuration and dumps, shells. */
const SCANNER = /(?:^|\/)(?:wp-(?:login|admin|content|includes|config)|xmlrpc\.php|\.env|\.git|\.svn|\.hg|\.ds_store|\.htaccess|\.htpasswd|phpmyadmin|pma|adminer|server-status|config\.(?:php|json|yml|yaml)|web\.config|backup|dump\.sql|database\.sql|\.aws|\.ssh|id_rsa|etc\/passwd|cgi-bin|shell\.php|eval-stdin\.php|vendor\/phpunit|actuator|boaform|hnap1|owa\/|autodiscover)/i;
const PHP = /\.(?:php\d?|asp|aspx|jsp|cgi)(?:$|[?/])/i;
const TRAVERSAL = /(?:\.\.[/\\]|[/\\]\.\.(?:$|[/\\])|%2e%2e|%252e|\.\.%2f|%c0%ae|\/etc\/(?:passwd|shadow))/i;
// Injection shapes, not SQL words: an ordinary query such as `?utm_content=select-from-menu` passes.
const SQLI = /(?:\bunion\s+(?:all\s+)?select\b|['"`)]\s*(?:or|and)\s+['"`(]?\w+['"`)]?\s*(?:=|like\b)|['"`]\s*(?:--|#|\/\*)|\b(?:sleep|benchmark|pg_sleep)\s*\(\s*\d|\binformation_schema\b|;\s*(?:drop|delete|insert|update|truncate)\s+\w|\bwaitfor\s+delay\b|\bor\s+1\s*=\s*1\b)/i;
const XSS = /(?:<\s*script|javascript:|on(?:error|load|mouseover|focus)\s*=|<\s*img[^>]+src|<\s*svg[\s/>]|<\s*iframe|document\.cookie|alert\s*\()/i;
/** Decodes percent-escapes (twice, for double encoding) without throwing on malformed input. */
function decoded(text) {
    let value = text;
    for (let i = 0; i < 2; i++) {
        try {
            const next = decodeURIComponent(value.replace(/\+/g, ' '));
            if (next === value)
                break;
            value = next;
        }
        catch {
            break;
        }
    }
    return value;
}
/**
 * A path of letters, digits, `_`, `-` and `/` with no query (the usual short link): nothing in it
 * can be escaped or hold markup, so only the traversal, injection and scanner patterns are tried
 * (the same answer as the full classification below, in its order).
 */
const PLAIN_PATH = /^[\w/-]*$/;
/** The kind of attack a request path (with its query) looks like, or undefined for an ordinary request. */
export function classifyAttack(pathWithQuery) {
    const raw = pathWithQuery;
    if (PLAIN_PATH.test(raw))
        return TRAVERSAL.test(raw) ? 'traversal' : SQLI.test(raw) ? 'sqli' : SCANNER.test(raw) ? 'scanner' : undefined;
    const text = raw.includes('%') || raw.includes('+') ? decoded(raw) : raw;
    if (TRAVERSAL.test(raw) || (text !== raw && TRAVERSAL.test(text)))
        return 'traversal';
    if (XSS.test(text))
        return 'xss';
    if (SQLI.test(text))
        return 'sqli';
    const path = text.split('?')[0] ?? '';
    if (SCANNER.test(path) || PHP.test(path))
        return 'scanner';
    return undefined;
}
//# sourceMappingURL=attack.js.map