/**
 * Security headers of the HTML the platform serves (the dashboard and the subdomains' public
 * pages). Scripts and styles come only from the platform itself, never inline and never from a
 * CDN; `styleHashes` admits the one inline stylesheet of a server-rendered page by its SHA-256.
 */
export function htmlSecurityHeaders({ frameAncestors, styleHashes = [], scripts = true }: { frameAncestors: string; styleHashes?: string[]; scripts?: boolean }): Record<string, string> {
  const csp = [
    "default-src 'none'",
    scripts ? "script-src 'self'" : "script-src 'none'",
    `style-src 'self'${styleHashes.map((hash) => ` 'sha256-${hash}'`).join('')}`,
    "img-src 'self' data: blob:",
    "font-src 'self'",
    "connect-src 'self'",
    "manifest-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    `frame-ancestors ${frameAncestors}`,
  ].join('; ');
  return {
    'Content-Security-Policy': csp,
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'strict-origin-when-cross-origin',
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Permissions-Policy': 'camera=(), microphone=(), geolocation=(), payment=(), usb=()',
    ...(frameAncestors === "'none'" ? { 'X-Frame-Options': 'DENY' } : {}),
  };
}
