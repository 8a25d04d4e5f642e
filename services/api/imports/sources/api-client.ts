import { AppError } from '#shared/errors.js';

/** How an importer reaches a source's API: its name (for messages), base URL, key header and fetch. */
export interface SourceApi {
  name: string;
  /** The base URL as the user gave it (named in messages). */
  url: string;
  /** The API's root under it, e.g. `https://s.example/rest/v3`. */
  base: string;
  headers: Record<string, string>;
  /** What the user gave to be let in: the detail an error names, and its words (default `api_key`, "API key"). */
  credential?: { field: string; label: string };
  /** Send the parameters as a form body of a POST rather than a query (YOURLS: a password stays out of URLs and their logs). */
  form?: boolean;
  fetch?: typeof fetch;
}

/** The `title` of an RFC 9457 problem (Shlink), the `error` of Kutt's body or the `message` of YOURLS's, as `: <text>` ('' when none). */
const reasonOf = (text: string): string => {
  try {
    const body = JSON.parse(text) as Record<string, unknown>;
    const reason = [body.title, body.error, body.message].find((value): value is string => typeof value === 'string') ?? '';
    return reason ? `: ${reason.slice(0, 200)}` : '';
  } catch {
    return '';
  }
};

/**
 * GETs (or POSTs, `form`) a JSON answer of a source's API. A 401 or 403 is 422 `validation_error` naming the key (the
 * user gave a wrong one); no answer, another failing status or an answer that is not JSON is 503
 * `service_unavailable` (the source is the dependency that failed), so an import stops there.
 */
export async function getJson<T>(api: SourceApi, path: string, params: Record<string, string | number>): Promise<T> {
  const query = new URLSearchParams(Object.entries(params).map(([name, value]) => [name, String(value)]));
  let response: Response;
  try {
    const headers = { ...api.headers, accept: 'application/json' };
    response = await (api.fetch ?? globalThis.fetch)(
      api.form ? `${api.base}${path}` : `${api.base}${path}?${query}`,
      api.form ? { method: 'POST', headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' }, body: query.toString() } : { headers },
    );
  } catch (error) {
    throw new AppError('service_unavailable', { source: `${api.name} at ${api.url} did not answer: ${(error as Error).message}` });
  }
  const text = await response.text();
  if (response.status === 401 || response.status === 403) {
    const { field, label } = api.credential ?? { field: 'api_key', label: 'API key' };
    throw new AppError('validation_error', { [field]: `${api.name} refused the ${label} (${response.status}${reasonOf(text)})` });
  }
  if (!response.ok) throw new AppError('service_unavailable', { source: `${api.name} answered ${response.status}${reasonOf(text)} to ${path}` });
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new AppError('service_unavailable', { source: `${api.name}'s answer to ${path} is not JSON` });
  }
}
