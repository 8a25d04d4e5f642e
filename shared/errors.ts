import { RESERVED_ERRORS, type ReservedErrorCode } from './reserved.js';

/**
 * The error catalogue: every code of the spec's table, in its order, with its HTTP status and
 * what it means. It drives AppError, GET /api/v1/errors, the OpenAPI failure schema and the i18n
 * keys. The codes the spec lists for the neighbouring service API, which nothing here raises,
 * come from `reserved.ts` with the reason for each.
 */
export const ERROR_CATALOGUE = {
  bad_request: { status: 400, condition: 'malformed request, unknown parameter' },
  missing_parameter: { status: 400, condition: 'required parameter absent' },
  validation_error: { status: 422, condition: 'parameters present but invalid; details maps field to rule' },
  unauthorized: { status: 401, condition: 'no credentials' },
  invalid_token: { status: 401, condition: 'token unknown, revoked or expired' },
  forbidden: { status: 403, condition: 'authenticated but not allowed' },
  not_owner: { status: 403, condition: 'object belongs to someone else' },
  visibility_denied: RESERVED_ERRORS.visibility_denied,
  terms_not_accepted: RESERVED_ERRORS.terms_not_accepted,
  agent_suspended: RESERVED_ERRORS.agent_suspended,
  not_found: { status: 404, condition: 'no such object' },
  method_not_allowed: { status: 405, condition: 'wrong HTTP method' },
  conflict: { status: 409, condition: 'uniqueness violation' },
  slug_taken: RESERVED_ERRORS.slug_taken,
  duplicate_client_id: { status: 200, condition: 'idempotent replay of a write; the original object is returned' },
  task_not_claimable: RESERVED_ERRORS.task_not_claimable,
  task_not_yours: RESERVED_ERRORS.task_not_yours,
  gone: { status: 410, condition: 'deleted permanently' },
  payload_too_large: { status: 413, condition: 'body or field over the limit' },
  too_large: RESERVED_ERRORS.too_large,
  depth_exceeded: RESERVED_ERRORS.depth_exceeded,
  section_locked: RESERVED_ERRORS.section_locked,
  rate_limited: { status: 429, condition: 'bucket exhausted; Retry-After set' },
  spam_detected: { status: 429, condition: 'anti-spam heuristics' },
  internal_error: { status: 500, condition: 'server-side failure' },
  encode_error: { status: 500, condition: 'payload could not be JSON-encoded' },
  not_implemented: { status: 501, condition: 'route registered, handler not yet present' },
  service_unavailable: { status: 503, condition: 'maintenance or dependency down' },
} as const satisfies Record<string, { status: number; condition: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;
/** The codes something raises: every code of the catalogue but the reserved ones. */
export type LiveErrorCode = Exclude<ErrorCode, ReservedErrorCode>;

export const ERROR_CODES = Object.keys(ERROR_CATALOGUE) as ErrorCode[];

/** Path of the error reference that every error object links to in `docs`. */
export const ERROR_DOCS_PATH = '/api/v1/errors';

/** Returns the docs link of one error code. */
export function errorDocs(code: ErrorCode): string {
  return `${ERROR_DOCS_PATH}#${code}`;
}

/**
 * A 429 (`rate_limited` or `spam_detected`) that tells the client when to come back: Retry-After in
 * whole seconds (at least 1) and in details, with the localised "try again in N seconds".
 */
export function retryLater(code: 'rate_limited' | 'spam_detected', seconds: number, details: ErrorDetails = {}): AppError {
  const wait = Math.max(1, Math.ceil(seconds));
  return new AppError(
    code,
    { ...details, retry_after: wait },
    {
      headers: { 'Retry-After': String(wait) },
      messageKey: 'error.rate_limited.retry',
      params: { seconds: wait },
    },
  );
}

/** Returns true when the string is one of the catalogue's codes. */
export function isErrorCode(value: string): value is ErrorCode {
  return Object.prototype.hasOwnProperty.call(ERROR_CATALOGUE, value);
}

/** Message variants that say more than the code's generic message; each is an i18n key. */
export type MessageVariant =
  | 'error.bad_request.unknown_parameter'
  | 'error.bad_request.malformed_json'
  | 'error.bad_request.unsupported_media_type'
  | 'error.bad_request.unsupported_charset'
  | 'error.bad_request.json_too_deep'
  | 'error.bad_request.invalid_host'
  | 'error.bad_request.http_version'
  | 'error.bad_request.timeout'
  | 'error.not_found.link'
  | 'error.gone.expired'
  | 'error.gone.limit_reached'
  | 'error.conflict.password_common'
  | 'error.payload_too_large.headers'
  | 'error.missing_parameter.named'
  | 'error.method_not_allowed.allowed'
  | 'error.forbidden.captcha_required'
  | 'error.forbidden.current_password'
  | 'error.forbidden.reset_link_unknown'
  | 'error.forbidden.reset_link_used'
  | 'error.forbidden.reset_link_expired'
  | 'error.forbidden.totp_code_wrong'
  | 'error.forbidden.totp_enrolment_required'
  | 'error.conflict.totp_enabled'
  | 'error.conflict.totp_not_pending'
  | 'error.conflict.totp_not_enabled'
  | 'error.unauthorized.second_factor_wrong'
  | 'error.unauthorized.challenge_invalid'
  | 'error.unauthorized.account_disabled'
  | 'error.forbidden.reset_account_disabled'
  | 'error.conflict.account_disabled'
  | 'error.conflict.cannot_disable_self'
  | 'error.conflict.last_active_staff'
  | 'error.conflict.cannot_delete_self'
  | 'error.conflict.last_staff'
  | 'error.forbidden.totp_required'
  | 'error.conflict.last_team_owner'
  | 'error.conflict.team_subdomains'
  | 'error.forbidden.consent_required'
  | 'error.forbidden.origin_not_allowed'
  | 'error.forbidden.destination_not_allowed'
  | 'error.unauthorized.invalid_credentials'
  | 'error.rate_limited.retry'
  | 'error.service_unavailable.dependency'
  | 'error.service_unavailable.public_pages_not_served';

export type ErrorDetails = Record<string, unknown>;

/**
 * The one error class services throw. Only the HTTP error handler turns it into a response.
 * `headers` carries protocol headers that belong to the error (Allow, Retry-After). It takes live
 * codes only: a reserved code cannot be thrown by mistake.
 */
export class AppError extends Error {
  readonly code: LiveErrorCode;
  readonly status: number;
  readonly details: ErrorDetails;
  readonly headers: Record<string, string>;
  /** A more precise message than the code's own (a key of the i18n catalogue), with its values. */
  readonly messageKey: MessageVariant | undefined;
  readonly params: Record<string, string | number>;

  constructor(
    code: LiveErrorCode,
    details: ErrorDetails = {},
    options: {
      headers?: Record<string, string>;
      messageKey?: MessageVariant;
      params?: Record<string, string | number>;
      cause?: unknown;
    } = {},
  ) {
    super(code, { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.status = ERROR_CATALOGUE[code].status;
    this.details = details;
    this.headers = options.headers ?? {};
    this.messageKey = options.messageKey;
    this.params = options.params ?? {};
  }
}
