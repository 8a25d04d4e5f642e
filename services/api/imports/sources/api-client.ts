import { AppError } from '#shared/errors.js';

/** How an importer reaches a source's API: its name (for messages), base URL, key header and fetch. */
export interface SourceApi {
  name: string;
  /** The base URL as the user gave it (named in messages). */
  url: string;
  /** The API's root under it, e.g. `https://s.example/rest/v3`. */
  base: string;
  headers: Record<string, string>;
  fetch?: typeof fetch;
}

/** The `title` of an RFC 9457 problem, or the `error` of Kutt's `{ error }` body, as `: <text>` ('' when none). */
const reasonOf = (text: string): string => {
  try {
    const body = JSON.parse(text) as { title?: unknown; error?: unknown };
    const reason = typeof body.title === 'string' ? body.title : typeof body.error === 'string' ? body.error : '';
    return reason ? `: ${reason.slice(0, 200)}` : '';
  } catch {
    return '';
  }
};

/**
 * GETs a JSON answer of a source's API. A 401 or 403 is 422 `validation_error` naming the key (the
 * user gave a wrong one); no answer, another failing status or an answer that is not JSON is 503
 * `service_unavailable` (the source is the dependency that failed), so an import stops there.
 */
export async function getJson<T>(api: SourceApi, path: string, params: Record<string, string | number>): Promise<T> {
  const query = new URLSearchParams(Object.entries(params).map(([name, value]) => [name, String(value)]));
  let response: Response;
  try {
    response = await (api.fetch ?? globalThis.fetch)(`${api.base}${path}?${query}`, { headers: { ...api.headers, accept: 'application/json' } });
  } catch (error) {
    throw new AppError('service_unavailable', { source: `${api.name} at ${api.url} did not answer: ${(error as Error).message}` });
  }
  const text = await response.text();
  if (response.status === 401 || response.status === 403) {
    throw new AppError('validation_error', { api_key: `${api.name} refused the API key (${response.status}${reasonOf(text)})` });
  }
  if (!response.ok) throw new AppError('service_unavailable', { source: `${api.name} answered ${response.status}${reasonOf(text)} to ${path}` });
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new AppError('service_unavailable', { source: `${api.name}'s answer to ${path} is not JSON` });
  }
}
