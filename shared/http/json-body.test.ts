import { describe, expect, it } from 'vitest';
import { charsetOf, MAX_JSON_DEPTH, nestsDeeperThan, parseClientJson } from './json-body.js';
import { unstorableFields } from './register.js';

describe('nestsDeeperThan', () => {
  it('counts objects and arrays, not brackets inside strings or after escaped quotes', () => {
    expect(nestsDeeperThan('{"a":[{"b":[]}]}', 4)).toBe(false);
    expect(nestsDeeperThan('{"a":[{"b":[]}]}', 3)).toBe(true);
    expect(nestsDeeperThan(JSON.stringify({ a: '[[[[{{{{', b: 'x\\"[[[[' }), 1)).toBe(false);
    expect(nestsDeeperThan(JSON.stringify(['\\', [[1]]]), 2)).toBe(true);
  });

  it('closing brackets before opening ones cannot buy depth', () => {
    expect(nestsDeeperThan(']]]]' + '['.repeat(5), 4)).toBe(true);
  });

  it('walks a text 1 000 000 levels deep without recursion', () => {
    expect(nestsDeeperThan('['.repeat(1_000_000) + ']'.repeat(1_000_000), MAX_JSON_DEPTH)).toBe(true);
  });
});

describe('parseClientJson', () => {
  it('parses JSON within the limit, says undefined for text that is not JSON, refuses a deeper one', () => {
    expect(parseClientJson('{"a":[1]}', 'data')).toEqual({ value: { a: [1] } });
    expect(parseClientJson('{oops', 'data')).toBeUndefined();
    expect(() => parseClientJson('['.repeat(40) + ']'.repeat(40), 'data')).toThrow(
      expect.objectContaining({ code: 'bad_request', details: { data: 'nested too deeply', max_depth: 32 } }),
    );
  });
});

describe('charsetOf', () => {
  it('reads the charset parameter in any case, quoted or not, and nothing else', () => {
    expect(charsetOf('application/json')).toBeUndefined();
    expect(charsetOf('application/json; charset=UTF-7')).toBe('utf-7');
    expect(charsetOf('application/json;CHARSET="utf-8"')).toBe('utf-8');
    expect(charsetOf('application/json; foo=bar; charset = latin1 ')).toBe('latin1');
    expect(charsetOf('application/json; xcharset=utf-7')).toBeUndefined();
  });
});

describe('unstorableFields', () => {
  it('names the fields holding NUL or a lone surrogate, keys included, in document order', () => {
    expect(unstorableFields({ a: 'ok', b: ['x', 'y\u0000'], c: { '\ud800': 1 }, d: { e: '\udc00' } })).toEqual(['b.1', 'c', 'd.e']);
    expect(unstorableFields('\u0000')).toEqual(['']);
  });

  it('walks an input 100 000 levels deep without running out of stack', () => {
    let deep: unknown = 'bad\u0000';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    const found = unstorableFields(deep);
    expect(found).toHaveLength(1);
    expect(found[0]!.split('.')).toHaveLength(100_000);
  });
});
