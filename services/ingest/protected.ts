import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { t, type Locale } from '#shared/i18n/index.js';
import { htmlSecurityHeaders } from '#shared/http/security-headers.js';
import { AppError, retryLater } from '#shared/errors.js';
import { setRateLimitHeaders, type RateDecision, type RateLimiter } from '#shared/http/rate-limit.js';
import { verifyPassword } from '#shared/password.js';
import type { RedirectLink } from '#shared/links/link-notices.js';
import type { RateBucket } from '#shared/config.js';

// Issue 40, protected links: the password page the edge answers for a link with a password, and the
// check of the form it posts. Rendered from the cached link (its scrypt hash travels in the link
// record), without script; no cookie is set, so every visit through the short URL asks again.

/** The bucket the tries count in, keyed by address and link: RATE_LIMIT_AUTH (default 20 per 900 s). */
export const PASSWORD_BUCKET = 'auth' satisfies RateBucket;
/** Longest password a try may carry (the API accepts up to 128): longer is wrong without hashing it. */
const MAX_PASSWORD_LENGTH = 128;
/** Longest referrer the page carries on to the visit (the visit keeps at most this anyway). */
const MAX_REFERRER_LENGTH = 2_000;

const PAGE_CSS =
  'body{font:16px/1.5 system-ui,sans-serif;max-width:28rem;margin:4rem auto;padding:0 1rem;color:#1f2328}h1{font-size:1.5rem}' +
  'label{display:block;font-weight:600;margin:.5rem 0 .25rem}input{font:inherit;width:100%;box-sizing:border-box;padding:.5rem;border:1px solid #57606a;border-radius:4px}' +
  'button{font:inherit;margin-top:1rem;padding:.5rem 1rem;border:0;border-radius:4px;background:#0a58ca;color:#fff}' +
  '.error{color:#b3261e;font-weight:600}input:focus,button:focus{outline:3px solid #0a58ca;outline-offset:2px}';

const BASE_HEADERS = htmlSecurityHeaders({ frameAncestors: "'none'", styleHashes: [createHash('sha256').update(PAGE_CSS).digest('base64')], scripts: false });

/**
 * The public page's policy (no script, styles only from the platform or admitted by hash), but never
 * framed: a password form in someone else's frame invites clickjacking. Browsers hold the redirect
 * that follows a form's post to form-action too, and the target is on another origin, which the page
 * must not name before the password is given: the form may lead to any http(s) URL.
 */
const PAGE_HEADERS = {
  ...BASE_HEADERS,
  'Content-Security-Policy': BASE_HEADERS['Content-Security-Policy']!.replace("form-action 'self'", "form-action 'self' https: http:"),
  'Cache-Control': 'no-store',
};

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char]!);

/** The password page: a labelled field, the error (announced) after a wrong try, the referrer carried on. */
export function renderPasswordPage(locale: Locale, action: string, referrer: string, wrong: boolean): string {
  const error = wrong ? `<p id="password-error" class="error" role="alert">${escapeHtml(t(locale, 'protected.wrong'))}</p>` : '';
  const described = wrong ? 'protected-intro password-error' : 'protected-intro';
  return `<!doctype html>
<html lang="${locale}">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="robots" content="noindex">
<title>${escapeHtml(t(locale, 'protected.title'))}</title>
<style>${PAGE_CSS}</style>
</head>
<body>
<main>
<h1>${escapeHtml(t(locale, 'protected.title'))}</h1>
<p id="protected-intro">${escapeHtml(t(locale, 'protected.intro'))}</p>
<form method="post" action="${escapeHtml(action)}">
<label for="password">${escapeHtml(t(locale, 'protected.label'))}</label>
<input id="password" name="password" type="password" required autocomplete="current-password" autofocus aria-describedby="${described}"${wrong ? ' aria-invalid="true"' : ''}>
${error}
<input type="hidden" name="referrer" value="${escapeHtml(referrer)}">
<button type="submit">${escapeHtml(t(locale, 'protected.submit'))}</button>
</form>
</main>
</body>
</html>
`;
}

/** The page's answer: 200 for the GET (and HEAD), 403 after a wrong password. */
export function sendPasswordPage(request: FastifyRequest & { locale: Locale }, reply: FastifyReply, options: { wrong: boolean; referrer: string }) {
  // The form posts back to the same path and query (the query reaches the visit, as a redirect's does).
  const action = request.url.slice(0, 2_000);
  return reply
    .code(options.wrong ? 403 : 200)
    .headers(PAGE_HEADERS)
    .header('Content-Language', request.locale)
    .header('X-Request-Id', request.id)
    .type('text/html; charset=utf-8')
    .send(renderPasswordPage(request.locale, action, options.referrer.slice(0, MAX_REFERRER_LENGTH), options.wrong));
}

/** The form's fields, from an urlencoded body (anything else carries none). */
export function passwordForm(body: unknown): { password: string | undefined; referrer: string } {
  const fields = body instanceof URLSearchParams ? body : undefined;
  return { password: fields?.get('password') ?? undefined, referrer: fields?.get('referrer') ?? '' };
}

/**
 * A form posted from another origin is refused (403): the page's own form always sends its origin,
 * and a form elsewhere has no business trying passwords here. Browsers that send no Origin pass.
 */
export function assertSameOrigin(request: FastifyRequest): void {
  const origin = request.headers.origin;
  if (origin === undefined) return;
  let host: string | undefined;
  try {
    host = origin === 'null' ? undefined : new URL(origin).host;
  } catch {
    host = undefined;
  }
  if (host === undefined || host.toLowerCase() !== (request.headers.host ?? '').toLowerCase()) throw new AppError('forbidden', { reason: 'cross_origin_form' });
}

/**
 * Counts one try in the auth bucket under the address and the link, before the hash is computed: a
 * refused try costs no scrypt. 429 (with Retry-After and the rate-limit headers) once the bucket is full.
 */
export async function countTry(limiter: RateLimiter, reply: FastifyReply, ip: string, link: RedirectLink): Promise<RateDecision> {
  const decision = await limiter.check(PASSWORD_BUCKET, `link-password|${ip}|${link.id}`);
  setRateLimitHeaders(reply, decision);
  if (!decision.allowed) throw retryLater('rate_limited', decision.resetSec, { bucket: PASSWORD_BUCKET, limit: decision.limit });
  return decision;
}

/**
 * Checks a node runs at once, and tries that may wait for one. One scrypt check takes 32 MiB and one
 * of libuv's four pool threads for some 50–100 ms: at one at a time a burst of tries (from many
 * addresses, each within its bucket) costs an edge node 32 MiB and one thread, and leaves the pool's
 * other threads to the file and DNS work the redirects need. Beyond the queue, a try is refused 429.
 */
export const PASSWORD_CHECKS = { running: 1, waiting: 16 } as const;

/** The password checks of this process: PASSWORD_CHECKS.running at a time, the rest queued or refused. */
export function createPasswordChecker(limits: { running: number; waiting: number } = PASSWORD_CHECKS) {
  let running = 0;
  const queue: (() => void)[] = [];
  const release = () => {
    const next = queue.shift();
    if (next) next();
    else running--;
  };
  return {
    /** True when the try carries the link's password (scrypt on libuv's pool: the event loop is not held). */
    async accepted(link: RedirectLink, password: string | undefined): Promise<boolean> {
      if (!link.password_hash || password === undefined || password.length === 0 || password.length > MAX_PASSWORD_LENGTH) return false;
      if (running >= limits.running) {
        if (queue.length >= limits.waiting) throw retryLater('rate_limited', 1, { bucket: PASSWORD_BUCKET, reason: 'password_checks_busy' });
        await new Promise<void>((resolve) => queue.push(resolve));
      } else running++;
      try {
        return await verifyPassword(password, link.password_hash);
      } finally {
        release();
      }
    },
  };
}
