import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { dependencyPorts, unavailableDependency } from './unavailable.js';

/** A free loopback port nothing listens on: a real ECONNREFUSED. */
const CLOSED_PORT = 9;

describe('unavailableDependency', () => {
  const ports = dependencyPorts({
    database: 'postgres://u:p@127.0.0.1:55432/db',
    cache: 'redis://127.0.0.1:56379',
    visit_log: ['127.0.0.1:59092', '127.0.0.1:59094'],
    analytics: 'http://127.0.0.1:8123',
  });

  it('names the database for a real pg connection refused, attributed by its port', async () => {
    const client = new pg.Client({ host: '127.0.0.1', port: CLOSED_PORT, connectionTimeoutMillis: 2_000 });
    const error = await client.connect().then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeDefined();
    expect(unavailableDependency(error, dependencyPorts({ database: `postgres://127.0.0.1:${CLOSED_PORT}/x` }))).toBe('database');
    // The same refusal on a port no dependency has is nobody's (a webhook receiver's, say).
    expect(unavailableDependency(error, ports)).toBeUndefined();
  });

  it('names the database for the server going away, whatever the port', () => {
    expect(unavailableDependency(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }))).toBe('database');
    expect(unavailableDependency(new Error('Connection terminated unexpectedly'))).toBe('database');
    expect(unavailableDependency(Object.assign(new Error('the database system is starting up'), { code: '57P03' }))).toBe('database');
  });

  it('names the cache for ioredis giving up, and looks through causes and aggregate errors', () => {
    expect(
      unavailableDependency(Object.assign(new Error('Reached the max retries per request limit (which is 1).'), { name: 'MaxRetriesPerRequestError' })),
    ).toBe('cache');
    const refused = (port: number) => Object.assign(new Error(`connect ECONNREFUSED 127.0.0.1:${port}`), { code: 'ECONNREFUSED', port });
    expect(unavailableDependency(new AggregateError([refused(59094)], 'all brokers'), ports)).toBe('visit_log');
    expect(unavailableDependency(new Error('query failed', { cause: refused(8123) }), ports)).toBe('analytics');
    expect(unavailableDependency(new Error('query failed', { cause: refused(56379) }), ports)).toBe('cache');
  });

  it('leaves every other failure alone', () => {
    expect(unavailableDependency(new TypeError('x is undefined'), ports)).toBeUndefined();
    expect(unavailableDependency(Object.assign(new Error('duplicate key value violates unique constraint'), { code: '23505' }), ports)).toBeUndefined();
    expect(unavailableDependency('a string', ports)).toBeUndefined();
    expect(unavailableDependency(undefined, ports)).toBeUndefined();
  });
});
