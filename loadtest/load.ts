// One load of a scenario: autocannon's programmatic API (this process; the platform is another),
// with checks on every answer and a stop that lets each connection's request in flight come back,
// so that what the load generator counts is every answer the server sent.
import { createRequire } from 'node:module';

/** A request of autocannon's `requests` list (the subset used here); a connection sends them in turn. */
export interface LoadRequest {
  method?: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /** Builds the request from the connection's context (what earlier answers left there). */
  setupRequest?: (request: LoadRequest, context: Record<string, unknown>) => LoadRequest;
  onResponse?: (status: number, body: string, context: Record<string, unknown>, headers: Record<string, string | string[]>) => void;
}

/** The fields of one autocannon connection the stop below uses (autocannon 9's `Client`). */
interface AutocannonClient {
  reqsMade: number;
  responseMax: number;
}

interface AutocannonResult {
  latency: { p50: number; p99: number };
  requests: { total: number };
  errors: number;
  timeouts: number;
  statusCodeStats: Record<string, { count: number }>;
}

type Autocannon = (
  options: {
    url: string;
    connections: number;
    amount: number;
    overallRate?: number;
    timeout: number;
    requests: LoadRequest[];
    setupClient: (client: AutocannonClient) => void;
  },
  done: (error: Error | null, result: AutocannonResult) => void,
) => { stop(): void; on(event: 'response', listener: () => void): void };

const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

/** Counts of named checks on answers (`redirect is 302`, …): the failures fail the scenario. */
export class Checks {
  readonly failed = new Map<string, number>();
  passed = 0;

  expect(name: string, ok: boolean): void {
    if (ok) this.passed += 1;
    else this.failed.set(name, (this.failed.get(name) ?? 0) + 1);
  }

  get failures(): number {
    let sum = 0;
    for (const count of this.failed.values()) sum += count;
    return sum;
  }
}

export interface LoadResult {
  /** Answers received. */
  requests: number;
  seconds: number;
  p50: number;
  p99: number;
  /** Requests that got no answer: connection errors and timeouts. */
  transportErrors: number;
  statuses: Record<string, number>;
}

/** Seconds a request may wait for its answer before it counts as a timeout. */
const REQUEST_TIMEOUT_S = 10;

/**
 * Sends `requests` in turn from `connections` keep-alive connections for `seconds` (at most `rate`
 * requests per second in all, when given). At the end no new request leaves, and each connection's
 * request in flight is waited for (autocannon's own duration would close the sockets under it: the
 * server answers and stores a visit the generator never counts).
 */
export function runLoad(base: string, options: { connections: number; seconds: number; rate?: number; requests: LoadRequest[] }): Promise<LoadResult> {
  const clients: AutocannonClient[] = [];
  return new Promise((resolve, reject) => {
    let stopTimer: NodeJS.Timeout | undefined;
    let guard: NodeJS.Timeout | undefined;
    // autocannon reports its end on its next one-second tick: the load lasted until the last answer.
    const started = performance.now();
    let lastAnswer = started;
    const instance = autocannon(
      {
        url: base,
        connections: options.connections,
        // A count instead of a duration: autocannon then ends a connection once its count is made,
        // after its last answer. The count is lowered to what each has made when the time is up.
        amount: Number.MAX_SAFE_INTEGER,
        ...(options.rate ? { overallRate: options.rate } : {}),
        timeout: REQUEST_TIMEOUT_S,
        requests: options.requests,
        setupClient: (client) => {
          if (typeof client.reqsMade !== 'number' || typeof client.responseMax !== 'number') {
            throw new Error("autocannon's Client has no reqsMade/responseMax: loadtest/load.ts stops connections through them");
          }
          clients.push(client);
        },
      },
      (error, result) => {
        clearTimeout(stopTimer);
        clearTimeout(guard);
        if (error) return reject(error);
        const statuses: Record<string, number> = {};
        for (const [status, { count }] of Object.entries(result.statusCodeStats)) statuses[status] = count;
        resolve({
          requests: result.requests.total,
          seconds: (lastAnswer - started) / 1000,
          p50: result.latency.p50,
          p99: result.latency.p99,
          transportErrors: result.errors,
          statuses,
        });
      },
    );
    instance.on('response', () => (lastAnswer = performance.now()));
    stopTimer = setTimeout(() => {
      // A connection that never sent a request sends one (0 would mean no limit to autocannon).
      for (const client of clients) client.responseMax = Math.max(1, client.reqsMade);
      // Bounded: a request still unanswered after its timeout ends the load the hard way.
      guard = setTimeout(() => instance.stop(), (REQUEST_TIMEOUT_S + 5) * 1000);
    }, options.seconds * 1000);
  });
}
