import { SESSION_COOKIE } from './route.js';

/**
 * Security headers of the HTML the platform serves (the dashboard and the subdomains' public
 * pages). Scripts and styles come only from the platform itself, never inline and never from a
 * CDN; `styleHashes` admits the one inline stylesheet of a server-rendered page by its SHA-256.
 */
export function htmlSecurityHeaders({
  frameAncestors,
  styleHashes = [],
  scripts = true,
}: {
  frameAncestors: string;
  styleHashes?: string[];
  scripts?: boolean;
}): Record<string, string> {
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

/**
 * Security headers of every answer that is not one of the platform's HTML pages (the envelope,
 * downloads, the tracker's script): nothing in it is to be rendered as a document, framed or
 * sniffed into another type. Lower-case names: Fastify stores them so, no conversion per answer.
 */
export const API_SECURITY_HEADERS = {
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
} as const;

const API_HEADER_ENTRIES = Object.entries(API_SECURITY_HEADERS);

/** The same headers as a flat `[name, value, …]` list, for answers written without Fastify. */
export const API_SECURITY_HEADER_LIST: readonly string[] = API_HEADER_ENTRIES.flat();

/**
 * The onSend hook of the platform's Fastify apps: an answer that set no Content-Security-Policy of
 * its own (the dashboard and the public pages set theirs, which stay as they are) gets
 * API_SECURITY_HEADERS, precomputed.
 */
export function apiSecurityHeadersHook<P>(
  _request: unknown,
  reply: { hasHeader(name: string): boolean; header(name: string, value: string): unknown },
  payload: P,
  done: (error: null, payload: P) => void,
): void {
  if (!reply.hasHeader('content-security-policy')) {
    for (const [name, value] of API_HEADER_ENTRIES) reply.header(name, value);
  }
  done(null, payload);
}

/** A Cookie header that carries the session cookie. */
const SESSION_IN_COOKIE = new RegExp(`(?:^|;)\\s*${SESSION_COOKIE}=`);

/**
 * The onSend hook of the API: an answer to a request that presents credentials (an Authorization
 * header or the session cookie), and every answer of the sign-in endpoints (`/auth/…`), gets
 * `Cache-Control: no-store` unless it set its own (the dashboard's files and the public pages keep
 * their caching): what one account reads is never kept by a browser's or a proxy's cache for the
 * next user of it.
 */
export function privateAnswersHook<P>(
  request: { url: string; headers: { authorization?: string; cookie?: string } },
  reply: { hasHeader(name: string): boolean; header(name: string, value: string): unknown },
  payload: P,
  done: (error: null, payload: P) => void,
): void {
  if (!reply.hasHeader('cache-control')) {
    const { authorization, cookie } = request.headers;
    if (authorization !== undefined || (cookie !== undefined && SESSION_IN_COOKIE.test(cookie)) || request.url.startsWith('/auth/')) {
      reply.header('cache-control', 'no-store');
    }
  }
  done(null, payload);
}
