import type { RequestListener } from 'node:http';
import inject from 'light-my-request';

/**
 * Requests injected into a server's request listener (what a socket meets first: Host routing and
 * the edge's short-host listener, not only a Fastify app), with light-my-request, which lets a
 * test choose the peer address. Headers written by `writeHead` with a flat `[name, value, …]` list
 * are not in `getHeaders()`, where light-my-request reads them, so they are read back from the
 * head Node wrote.
 */
export function listenerClient(listener: RequestListener) {
  return {
    async inject(options: inject.InjectOptions): Promise<inject.Response> {
      const response = await inject(listener, options);
      const head = (response.raw.res as { _header?: string | null })._header ?? '';
      for (const line of head.split('\r\n').slice(1)) {
        const colon = line.indexOf(':');
        if (colon <= 0) continue;
        const name = line.slice(0, colon).trim().toLowerCase();
        if (!(name in response.headers)) response.headers[name] = line.slice(colon + 1).trim();
      }
      return response;
    },
  };
}
