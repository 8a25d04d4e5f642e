import { describe, expect, it } from 'vitest';
import { causedByMessage, isolatePoison, POISON_RUN_MAX, poisonReason } from './poison.js';
import { StageFailure } from './stages.js';

/** An error with extra fields, as drivers throw them. */
const errorWith = (message: string, fields: Record<string, unknown>, kind: ErrorConstructor = Error) => Object.assign(new kind(message), fields);

describe('causedByMessage', () => {
  it("takes the errors code throws on data it cannot handle for a message's fault", () => {
    for (const error of [
      new TypeError("Cannot read properties of undefined (reading 'x')"),
      new RangeError('Invalid time value'),
      new SyntaxError('Unexpected token'),
      new URIError('URI malformed'),
    ]) {
      expect(causedByMessage(error)).toBe(true);
    }
  });

  it("takes ClickHouse data errors for a message's fault, by code, however the client shapes them", () => {
    // @clickhouse/client (server): code as text; chDB's rawInsert: clickhouseCode; any: the text's `Code: N.`
    expect(causedByMessage(errorWith("Cannot parse input: expected '\"'", { code: '27', type: 'CANNOT_PARSE_INPUT_ASSERTION_FAILED' }))).toBe(true);
    expect(causedByMessage(errorWith('Code: 41. DB::Exception: Cannot read DateTime', { code: 'CHDB_INSERT', clickhouseCode: 41 }))).toBe(true);
    expect(causedByMessage(new Error('Code: 376. DB::Exception: Cannot parse UUID from String'))).toBe(true);
    expect(causedByMessage(errorWith('Value out of range', { code: '321' }))).toBe(true);
  });

  it('takes every other ClickHouse error for systemic: too many parts, read-only, timeouts, memory, a missing table', () => {
    for (const code of [252, 164, 242, 159, 241, 60, 210, 209, 243, 202, 394]) {
      expect(causedByMessage(errorWith(`Code: ${code}. DB::Exception: …`, { code: String(code) }))).toBe(false);
      expect(causedByMessage(errorWith(`Code: ${code}. DB::Exception: …`, { code: 'CHDB_INSERT', clickhouseCode: code }))).toBe(false);
    }
  });

  it("takes Postgres data exceptions (SQLSTATE class 22) for a message's fault, and other Postgres errors for systemic", () => {
    expect(causedByMessage(errorWith('date/time field value out of range: "0000-01-01"', { severity: 'ERROR', code: '22008' }))).toBe(true);
    expect(causedByMessage(errorWith('invalid byte sequence for encoding "UTF8": 0x00', { severity: 'ERROR', code: '22021' }))).toBe(true);
    expect(causedByMessage(errorWith('terminating connection due to administrator command', { severity: 'FATAL', code: '57P01' }))).toBe(false);
    expect(causedByMessage(errorWith('connection failure', { severity: 'FATAL', code: '08006' }))).toBe(false);
    expect(causedByMessage(errorWith('could not serialize access', { severity: 'ERROR', code: '40001' }))).toBe(false);
  });

  it('takes network and system errors for systemic, also when a TypeError wraps them', () => {
    expect(causedByMessage(errorWith('connect ECONNREFUSED 127.0.0.1:8123', { code: 'ECONNREFUSED' }))).toBe(false);
    expect(causedByMessage(errorWith('read ECONNRESET', { code: 'ECONNRESET' }))).toBe(false);
    expect(causedByMessage(new TypeError('fetch failed', { cause: errorWith('connect ECONNREFUSED', { code: 'ECONNREFUSED' }) }))).toBe(false);
    expect(causedByMessage(errorWith('socket hang up', { code: 'UND_ERR_SOCKET' }, TypeError))).toBe(false);
  });

  it('takes plain errors, and values that are not errors, for systemic', () => {
    expect(causedByMessage(new Error('an earlier batch failed: this one is redelivered after it'))).toBe(false);
    expect(causedByMessage(new Error('Timeout error.'))).toBe(false);
    expect(causedByMessage('boom')).toBe(false);
    expect(causedByMessage(undefined)).toBe(false);
  });

  it('looks through the stage a failure names', () => {
    expect(causedByMessage(new StageFailure('store', new TypeError('x')))).toBe(true);
    expect(causedByMessage(new StageFailure('store', errorWith('read ECONNRESET', { code: 'ECONNRESET' })))).toBe(false);
  });
});

describe('poisonReason', () => {
  it('names the stage and the error, on one line, within 500 characters', () => {
    const reason = poisonReason(
      new StageFailure('store', errorWith(`Code: 41. DB::Exception: Cannot read DateTime\nRow 1: ${'x'.repeat(600)}`, { clickhouseCode: 41 })),
    );
    expect(reason).toBe('store stage failed: Error: Code: 41. DB::Exception: Cannot read DateTime');
    expect(poisonReason(new StageFailure('finish', new TypeError('y'.repeat(600))))).toHaveLength(500);
  });
});

/**
 * A handler of parts that fails every part holding one of `poison` with a data error, and records
 * each part it was given and the messages it handled.
 */
function handlerOf(poison: Set<number>, error: () => unknown = () => new StageFailure('store', new RangeError('bad value'))) {
  const parts: number[][] = [];
  const handled: number[] = [];
  return {
    parts,
    handled,
    handle: async (part: number[]) => {
      parts.push(part);
      if (part.some((message) => poison.has(message))) throw error();
      handled.push(...part);
    },
  };
}

const batch = (size: number) => Array.from({ length: size }, (_, index) => index);

describe('isolatePoison', () => {
  it('handles every other message of the batch once, in order, and returns the poison with its stage, in about 2·log2(N) parts', async () => {
    const { handle, parts, handled } = handlerOf(new Set([11]));
    const poisons = await isolatePoison(batch(16), new StageFailure('store', new RangeError('bad value')), handle);
    expect(poisons).toEqual([{ message: 11, failure: expect.objectContaining({ stage: 'store' }) }]);
    expect(handled).toEqual(batch(16).filter((message) => message !== 11));
    expect(parts.length).toBe(2 * Math.log2(16));
  });

  it('finds each of several poison messages', async () => {
    const { handle, handled } = handlerOf(new Set([0, 7, 8]));
    const poisons = await isolatePoison(batch(10), new TypeError('x'), handle);
    expect(poisons.map(({ message }) => message)).toEqual([0, 7, 8]);
    expect(handled).toEqual([1, 2, 3, 4, 5, 6, 9]);
  });

  it('returns the message of a batch of one at once: it failed alone already', async () => {
    const { handle, parts } = handlerOf(new Set([0]));
    expect(await isolatePoison([0], new StageFailure('prepare', new URIError('URI malformed')), handle)).toEqual([
      { message: 0, failure: expect.objectContaining({ stage: 'prepare' }) },
    ]);
    expect(parts).toEqual([]);
  });

  it('rethrows a systemic failure of the batch as it was, handling nothing', async () => {
    const { handle, parts } = handlerOf(new Set());
    const refused = errorWith('connect ECONNREFUSED 127.0.0.1:8123', { code: 'ECONNREFUSED' });
    await expect(isolatePoison(batch(8), new StageFailure('store', refused), handle)).rejects.toBe(refused);
    expect(parts).toEqual([]);
  });

  it('rethrows a systemic failure met by a part (the store went down meanwhile)', async () => {
    const down = errorWith('Code: 242. DB::Exception: Table is in readonly mode', { clickhouseCode: 242 });
    let calls = 0;
    const handle = async () => {
      if (++calls === 2) throw new StageFailure('store', down);
    };
    await expect(isolatePoison(batch(8), new TypeError('x'), handle)).rejects.toBe(down);
  });

  it(`takes ${POISON_RUN_MAX} messages failing alone in a row for a systemic fault, not for poison`, async () => {
    const { handle, handled } = handlerOf(new Set(batch(100).slice(50)));
    await expect(isolatePoison(batch(100), new TypeError('x'), handle)).rejects.toThrow(`${POISON_RUN_MAX} messages in a row failed alone`);
    expect(handled).toEqual(batch(50));
  });

  it('takes a small batch whose every message fails alone for a systemic fault', async () => {
    const { handle } = handlerOf(new Set([0, 1]));
    await expect(isolatePoison(batch(2), new TypeError('x'), handle)).rejects.toThrow('2 messages in a row failed alone');
  });

  it('names the failure of a part that is no StageFailure after the handler', async () => {
    const { handle } = handlerOf(new Set([3]), () => new SyntaxError('Unexpected token'));
    const [poison] = await isolatePoison(batch(4), new SyntaxError('Unexpected token'), handle);
    expect(poison!.failure.stage).toBe('handler');
    expect(poisonReason(poison!.failure)).toBe('handler stage failed: SyntaxError: Unexpected token');
  });
});
