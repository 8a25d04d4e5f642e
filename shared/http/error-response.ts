import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { createHash } from 'node:crypto';
import { inspect } from 'node:util';
import Negotiator from 'negotiator';
import { AppError, ERROR_DOCS_PATH } from '../errors.js';
import { t, translateRules, type Locale } from '../i18n/index.js';
import { buildMeta, failure } from './envelope.js';
import { API_SECURITY_HEADERS, htmlSecurityHeaders } from './security-headers.js';
import { unavailableDependency, type UnavailableDependency } from '../unavailable.js';

/**
 * Turns anything thrown into an AppError: a dependency that cannot be reached becomes 503
 * service_unavailable naming it (`ports` attributes bare connection errors: dependencyPorts);
 * other unexpected failures become internal_error.
 */
export function toAppError(error: unknown, ports?: ReadonlyMap<number, UnavailableDependency>): { appError: AppError; unexpected: boolean } {
  if (error instanceof AppError) return { appError: error, unexpected: false };
  const dependency = unavailableDependency(error, ports);
  if (dependency) {
    return {
      appError: new AppError(
        'service_unavailable',
        { down: [dependency] },
        {
          messageKey: 'error.service_unavailable.dependency',
          params: { names: dependency },
          cause: error,
        },
      ),
      unexpected: false,
    };
  }
  const fastifyError = error as Partial<FastifyError> & { status?: number };
  const status = fastifyError.statusCode ?? fastifyError.status;
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { appError: new AppError('payload_too_large', {}, { cause: error }), unexpected: false };
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return {
        appError: new AppError('bad_request', { body: 'malformed JSON' }, { messageKey: 'error.bad_request.malformed_json', cause: error }),
        unexpected: false,
      };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return {
        appError: new AppError(
          'bad_request',
          { content_type: 'unsupported' },
          {
            messageKey: 'error.bad_request.unsupported_media_type',
            params: { type: String((error as { message?: string }).message?.match(/: (.*)$/)?.[1] ?? 'unknown') },
            cause: error,
          },
        ),
        unexpected: false,
      };
    default:
      // Any other code is decided by its status below.
      break;
  }
  if (status === 413) return { appError: new AppError('payload_too_large', {}, { cause: error }), unexpected: false };
  if (error instanceof SyntaxError || (status !== undefined && status >= 400 && status < 500)) {
    return { appError: new AppError('bad_request', {}, { cause: error }), unexpected: false };
  }
  return { appError: new AppError('internal_error', {}, { cause: error }), unexpected: true };
}

/** True when the client prefers an HTML page to JSON (a browser). */
export function prefersHtml(request: FastifyRequest): boolean {
  const accept = request.headers.accept;
  if (!accept) return false;
  return new Negotiator({ headers: { accept } }).mediaType(['application/json', 'text/html']) === 'text/html';
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char]!);

/** The error page's one stylesheet, inline: admitted by its hash, the page has no other source. */
const ERROR_PAGE_CSS =
  'body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem;color:#1f2328}h1{font-size:2rem;margin:0}code,pre{background:#f6f8fa;padding:.2rem .4rem;border-radius:4px}pre{padding:1rem;overflow:auto}nav a{margin-right:1rem}';

/** Headers of the HTML error page: no script, its own style only, never framed or sniffed. */
const ERROR_PAGE_HEADERS = Object.entries(
  htmlSecurityHeaders({ frameAncestors: "'none'", styleHashes: [createHash('sha256').update(ERROR_PAGE_CSS).digest('base64')], scripts: false }),
).map(([name, value]) => [name.toLowerCase(), value] as const);
const JSON_ERROR_HEADERS = Object.entries(API_SECURITY_HEADERS);

/** How sendError renders: exception detail or not, and where the error page's links lead. */
export interface ErrorOptions {
  showDetail: boolean;
  /** The page's "Home": the dashboard, or on a short host the subdomain's public page. */
  homeUrl: string;
  /** The platform's public URL (PUBLIC_URL, no trailing slash): the documentation links are absolute on it. */
  platformUrl: string;
}

/** The HTML error page: status, translated explanation, request id, links home and to the docs. */
export function renderErrorPage(options: {
  status: number;
  code: string;
  message: string;
  requestId: string;
  locale: Locale;
  homeUrl: string;
  platformUrl: string;
  exception?: string;
}): string {
  const { status, code, message, requestId, locale, platformUrl } = options;
  const title = t(locale, 'page.title', { status });
  const detail = options.exception ? `<section><h2>${escapeHtml(t(locale, 'page.detail'))}</h2><pre>${escapeHtml(options.exception)}</pre></section>` : '';
  return `<!doctype html>
<html lang="${locale}">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="robots" content="noindex">
<title>${escapeHtml(title)}</title>
<style>${ERROR_PAGE_CSS}</style>
</head>
<body>
<main>
<h1>${escapeHtml(title)}</h1>
<p>${escapeHtml(message)}</p>
<p><code>${escapeHtml(code)}</code></p>
<p>${escapeHtml(t(locale, 'page.request_id'))}: <code>${escapeHtml(requestId)}</code></p>
<nav><a href="${escapeHtml(options.homeUrl)}">${escapeHtml(t(locale, 'page.home'))}</a><a href="${escapeHtml(platformUrl)}/api/v1/openapi.json">${escapeHtml(t(locale, 'page.docs'))}</a><a href="${escapeHtml(platformUrl)}${ERROR_DOCS_PATH}#${escapeHtml(code)}">${escapeHtml(t(locale, 'page.errors'))}</a></nav>
${detail}
</main>
</body>
</html>
`;
}

/**
 * Writes the failure response: the envelope, or the HTML page for browsers. Exception detail
 * only when `showDetail` (DEBUG=1 or NODE_ENV=development, never by default).
 */
export function sendError(request: FastifyRequest, reply: FastifyReply, error: AppError, options: ErrorOptions): FastifyReply {
  const locale = request.locale;
  const message = t(locale, error.messageKey ?? `error.${error.code}`, error.params);
  const cause = error.cause;
  const exception =
    options.showDetail && cause !== undefined && error.status >= 500
      ? cause instanceof Error
        ? `${cause.name}: ${cause.message}\n${cause.stack ?? ''}`
        : inspect(cause, { depth: 4 })
      : undefined;
  reply.code(error.status).headers(error.headers).header('X-Request-Id', request.id).header('Content-Language', locale);
  const html = prefersHtml(request);
  for (const [name, value] of html ? ERROR_PAGE_HEADERS : JSON_ERROR_HEADERS) reply.header(name, value);
  if (html) {
    return reply.type('text/html; charset=utf-8').send(
      renderErrorPage({
        status: error.status,
        code: error.code,
        message,
        requestId: request.id,
        locale,
        homeUrl: options.homeUrl,
        platformUrl: options.platformUrl,
        exception,
      }),
    );
  }
  // Rules in details (each field's, of a validation_error or a conflict) are named in English by
  // schemas and services: translated here.
  const ruleDetails = translateRules(locale, error.details);
  const details = exception ? { ...ruleDetails, exception } : ruleDetails;
  const body = failure(error.code, message, details, buildMeta(request.id, reply.elapsedTime));
  return reply.type('application/json; charset=utf-8').send(JSON.stringify(body));
}
