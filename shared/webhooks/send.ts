import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { CheckedTarget } from './guard.js';

/** What one delivery attempt got back. */
export interface AttemptOutcome {
  /** HTTP status, or null when no response came (refused, timed out, connection failed). */
  statusCode: number | null;
  latencyMs: number;
  /** Why the attempt failed, or null on a 2xx. */
  error: string | null;
  /** The start of the response body (at most EXCERPT_CHARS characters); null for an allowlisted (internal) receiver. */
  excerpt: string | null;
}

/** Characters of a response body kept in the delivery log. */
export const EXCERPT_CHARS = 1024;
/** Bytes of a response body read at most; the connection is dropped beyond it. */
export const MAX_RESPONSE_BYTES = 64 * 1024;

// Keep-alive agents: a busy receiver is sent many deliveries over a few connections.
const agents = {
  'http:': new http.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64 }),
  'https:': new https.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64 }),
};

/**
 * POSTs a body to a target the guard checked, connecting to the checked address (the lookup
 * answers it without asking DNS again). Redirects are not followed (a 3xx is a failure), the
 * whole exchange is bounded by `timeoutMs`, and at most MAX_RESPONSE_BYTES of the answer are read.
 * The outcome goes to the webhook's owner, a tenant: for a receiver admitted only by
 * WEBHOOK_ALLOWLIST (`target.allowlisted`, an internal service) it tells the status and timing but
 * nothing the receiver said or where it is: no body excerpt, no redirect location, a connection
 * error by its code only.
 */
export function postTo(target: CheckedTarget, body: string, headers: Record<string, string>, timeoutMs: number): Promise<AttemptOutcome> {
  const started = performance.now();
  const pinned: LookupFunction = (_host, options, callback) => {
    if ((options as { all?: boolean }).all)
      (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  };
  return new Promise((resolve) => {
    let settled = false;
    const finish = (statusCode: number | null, error: string | null, excerpt: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      resolve({ statusCode, latencyMs: Math.round(performance.now() - started), error, excerpt });
    };
    const secure = target.url.protocol === 'https:';
    const request = (secure ? https : http).request({
      method: 'POST',
      host: target.host,
      port: target.port,
      path: `${target.url.pathname}${target.url.search}`,
      agent: agents[secure ? 'https:' : 'http:'],
      lookup: pinned,
      servername: secure && !/^[\d.]+$|:/.test(target.host) ? target.host : undefined,
      headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
    });
    const deadline = setTimeout(() => {
      request.destroy();
      finish(null, `timed out after ${timeoutMs} ms`, null);
    }, timeoutMs);
    request.on('error', (error: NodeJS.ErrnoException) =>
      finish(null, target.allowlisted ? (error.code ?? 'request failed') : `${error.code ?? 'request failed'}: ${error.message}`.slice(0, 300), null),
    );
    request.on('response', (response) => {
      const status = response.statusCode ?? 0;
      const chunks: Buffer[] = [];
      let size = 0;
      const done = () => {
        const excerpt = Buffer.concat(chunks).toString('utf8').slice(0, EXCERPT_CHARS) || null;
        const location = response.headers.location && !target.allowlisted ? ` (to ${String(response.headers.location).slice(0, 200)})` : '';
        let error: string | null = null;
        if (status >= 300 && status < 400) error = `redirect ${status} not followed${location}`;
        else if (status < 200 || status >= 300) error = `HTTP ${status}`;
        finish(status, error, excerpt);
      };
      let kept = 0;
      response.on('data', (chunk: Buffer) => {
        size += chunk.length;
        // Enough bytes for EXCERPT_CHARS characters of any UTF-8 text.
        if (!target.allowlisted && kept < EXCERPT_CHARS * 4) {
          const part = chunk.subarray(0, EXCERPT_CHARS * 4 - kept);
          chunks.push(part);
          kept += part.length;
        }
        if (size > MAX_RESPONSE_BYTES) {
          // Enough read: the rest is not wanted, and the socket is not reused.
          response.destroy();
          done();
        }
      });
      response.on('end', done);
      // A body cut short still tells the status (and the status decides).
      response.on('close', done);
    });
    request.end(body);
  });
}
