import { pino, type Logger } from 'pino';
import type { Config } from './config.js';

export type { Logger } from 'pino';

/** Builds the process logger: JSON lines on stdout, secrets redacted. */
export function createLogger(config: Pick<Config, 'logLevel'>): Logger {
  return pino({
    level: config.logLevel,
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'password',
        '*.password',
        'token',
        '*.token',
        'secret',
        '*.secret',
        // An import's credentials (issue 39).
        'api_key',
        '*.api_key',
        'signature',
        '*.signature',
      ],
      censor: '[redacted]',
    },
  });
}

/** A credential-like parameter of a URL's query or fragment, also behind an escaped `#` (`%23`, as some mail clients write it). */
const URL_SECRET = /((?:[?&#;]|%23)(?:token|secret|password)=)[^&#;\s]*/gi;

/**
 * The URL as a log line may hold it: the value of any `token`, `secret` or `password` parameter
 * replaced by `[redacted]`. A reset link carries its secret in the fragment, which browsers never
 * send, but a client may still put it in a query or escape the `#`; a URL without `=` is returned
 * as it is, at the cost of one scan.
 */
export function redactUrl(url: string): string {
  return url.includes('=') ? url.replace(URL_SECRET, '$1[redacted]') : url;
}
