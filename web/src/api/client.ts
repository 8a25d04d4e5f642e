// The dashboard's only way to the platform: the public API v1, typed from the platform's own
// OpenAPI document (generated at build time into schema.generated.d.ts), over the same-origin
// session cookie. No token is kept in the browser.
import createClient, { type Middleware } from 'openapi-fetch';
import type { components, paths } from './schema.generated';

export type { components, paths };
export type Schemas = components['schemas'];

/** The failure envelope's error, as every non-2xx JSON answer carries it. */
export interface ApiErrorBody {
  code: string;
  message: string;
  details?: Record<string, unknown>;
  request_id?: string;
}

/** A refused or failed API call: the envelope's code and localised message, the status, Retry-After. */
export class ApiError extends Error {
  readonly code: string;
  readonly status: number;
  readonly details: Record<string, unknown>;
  readonly requestId: string | undefined;
  /** Seconds, from Retry-After (429, some 503). */
  readonly retryAfter: number | undefined;

  constructor(status: number, body: ApiErrorBody | undefined, response?: Response) {
    super(body?.message ?? `HTTP ${status}`);
    this.name = 'ApiError';
    this.status = status;
    this.code = body?.code ?? (status === 0 ? 'network_error' : 'internal_error');
    this.details = body?.details ?? {};
    this.requestId = body?.request_id ?? response?.headers.get('x-request-id') ?? undefined;
    const retry = Number(response?.headers.get('retry-after'));
    this.retryAfter = Number.isFinite(retry) && retry > 0 ? retry : undefined;
  }
}

let language = 'en';

/** The language the API localises its messages in (sent as Accept-Language). */
export function setApiLanguage(locale: string): void {
  language = locale;
}

const languageMiddleware: Middleware = {
  onRequest({ request }) {
    request.headers.set('Accept-Language', language);
    return request;
  },
};

/** Listeners told when the session is gone (a 401 on any call): the shell shows the sign-in page. */
const signedOutListeners = new Set<() => void>();
export function onSignedOut(listener: () => void): () => void {
  signedOutListeners.add(listener);
  return () => signedOutListeners.delete(listener);
}

const sessionMiddleware: Middleware = {
  onResponse({ response, request }) {
    if (response.status === 401 && !new URL(request.url).pathname.startsWith('/auth/')) for (const listener of signedOutListeners) listener();
    return response;
  },
};

/** The typed client of the API v1 (openapi-fetch). */
export const api = createClient<paths>({ baseUrl: '', credentials: 'same-origin' });
api.use(languageMiddleware, sessionMiddleware);

type Envelope<T> = { ok: true; data: T; meta?: Record<string, unknown> };
type Result<T> = { data?: T; error?: unknown; response: Response };

/**
 * Awaits an openapi-fetch call and returns the envelope's `data` and `meta`, or throws an ApiError
 * with the envelope's code and message (a network failure is an ApiError of status 0).
 */
export async function call<D, T = D extends Envelope<infer Inner> ? Inner : never>(
  request: Promise<Result<D>>,
): Promise<{ data: T; meta: Record<string, unknown> }> {
  let result: Result<D>;
  try {
    result = await request;
  } catch (cause) {
    if (cause instanceof DOMException && cause.name === 'AbortError') throw cause;
    throw new ApiError(0, { code: 'network_error', message: cause instanceof Error ? cause.message : String(cause) });
  }
  if (result.error !== undefined || !result.response.ok) {
    const body = (result.error as { error?: ApiErrorBody } | undefined)?.error;
    throw new ApiError(result.response.status, body, result.response);
  }
  const envelope = result.data as unknown as Envelope<T>;
  return { data: envelope.data, meta: envelope.meta ?? {} };
}

/** Like `call`, for the data alone. */
export async function load<D, T = D extends Envelope<infer Inner> ? Inner : never>(request: Promise<Result<D>>): Promise<T> {
  return (await call<D, T>(request)).data;
}

const ROLE_RANK = { viewer: 1, editor: 2, admin: 3, owner: 4 } as const;

/**
 * The subdomains a picker offers: the caller's own and its teams' (`include=teams`), where its role
 * (`role`: `owner` of its own) is at least `least`: viewers read statistics, visits and exports,
 * editors manage links and imports, admins webhooks. Answers the list's shape, `{ subdomains }`.
 */
export async function reachableSubdomains(signal: AbortSignal, least: keyof typeof ROLE_RANK = 'viewer'): Promise<{ subdomains: Schemas['Subdomain'][] }> {
  const { subdomains } = await load(api.GET('/api/v1/subdomains', { params: { query: { limit: 200, include: 'teams' } }, signal }));
  return { subdomains: subdomains.filter((subdomain) => ROLE_RANK[subdomain.role] >= ROLE_RANK[least]) };
}
