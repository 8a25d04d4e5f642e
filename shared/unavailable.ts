/**
 * Failures that mean a dependency cannot be reached (down, restarting, refusing connections), told
 * apart from failures of a request: the API answers them 503 `service_unavailable` naming the
 * dependency, not 500, and nothing was written (a statement that loses its connection is rolled
 * back by the server).
 */

/** Node's codes of a connection that could not be made or was lost. */
const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNABORTED']);

/**
 * PostgreSQL SQLSTATEs of a server that is going away or cannot take the connection: class 08
 * (connection exception), 57P01–57P03 (admin or crash shutdown, cannot connect now), 53300 (too many
 * connections).
 */
const POSTGRES_UNAVAILABLE = /^(08...|57P0[123]|53300)$/;

/** The messages of `pg` and `pg-pool` when the server went away or never answered. */
const POSTGRES_MESSAGES =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection terminated unexpectedly)/;

/** ioredis, when Redis does not answer. */
const REDIS_NAMES = new Set(['MaxRetriesPerRequestError']);
const REDIS_MESSAGES = /^(Connection is closed\.|Stream isn't writeable|Reached the max retries per request limit)/;

/** Which dependencies can be named in a 503's details. */
export type UnavailableDependency = 'database' | 'analytics' | 'cache' | 'visit_log' | 'jobs';

interface ErrorLike {
  name?: unknown;
  port?: unknown;
  code?: unknown;
  message?: unknown;
  cause?: unknown;
  errors?: unknown;
}

/** The error itself, its causes and the members of aggregate errors (a connection to `localhost` tries ::1 and 127.0.0.1). */
function* chain(error: unknown, depth = 0): Generator<ErrorLike> {
  if (depth > 5 || error === null || typeof error !== 'object') return;
  const value = error as ErrorLike;
  yield value;
  if (Array.isArray(value.errors)) for (const inner of value.errors) yield* chain(inner, depth + 1);
  if (value.cause !== undefined) yield* chain(value.cause, depth + 1);
}

/** The port of each dependency that is a server (by its configured URL), to name the target of a bare connection error. */
export function dependencyPorts(urls: Partial<Record<UnavailableDependency, string | string[] | undefined>>): Map<number, UnavailableDependency> {
  const ports = new Map<number, UnavailableDependency>();
  const defaults: Record<string, number> = { 'postgres:': 5432, 'postgresql:': 5432, 'redis:': 6379, 'rediss:': 6379, 'http:': 80, 'https:': 443 };
  for (const [name, value] of Object.entries(urls) as [UnavailableDependency, string | string[] | undefined][]) {
    for (const url of [value ?? []].flat()) {
      try {
        // Kafka brokers are host:port without a scheme.
        const parsed = new URL(url.includes('://') ? url : `kafka://${url}`);
        const port = Number(parsed.port) || defaults[parsed.protocol];
        if (port && !ports.has(port)) ports.set(port, name);
      } catch {
        // Not a URL: nothing to attribute to it.
      }
    }
  }
  return ports;
}

/**
 * The dependency an error says is unreachable, or undefined when the error is anything else. A bare
 * connection error (ECONNREFUSED) is attributed by its port (`ports`, from dependencyPorts); one to
 * no known port is not a dependency's (a webhook receiver's, say).
 */
export function unavailableDependency(error: unknown, ports: ReadonlyMap<number, UnavailableDependency> = new Map()): UnavailableDependency | undefined {
  for (const link of chain(error)) {
    const code = typeof link.code === 'string' ? link.code : '';
    const message = typeof link.message === 'string' ? link.message : '';
    if (POSTGRES_UNAVAILABLE.test(code) || POSTGRES_MESSAGES.test(message)) return 'database';
    if ((typeof link.name === 'string' && REDIS_NAMES.has(link.name)) || REDIS_MESSAGES.test(message)) return 'cache';
    if (CONNECTION_CODES.has(code) && typeof link.port === 'number' && ports.has(link.port)) return ports.get(link.port);
  }
  return undefined;
}
