import { describe, expect, it } from 'vitest';
import { headerText, VISIT_TEXT_MAX, visitText } from './raw-visit.js';

/** A header value as Node's HTTP parser hands it over: each byte one Latin-1 character. */
const asNodeReadsIt = (bytes: Buffer | string) => Buffer.from(bytes).toString('latin1');

describe('headerText: header bytes as the text the client sent', () => {
  it('leaves ASCII values as they are', () => {
    expect(headerText('Mozilla/5.0 (X11; Linux x86_64)')).toBe('Mozilla/5.0 (X11; Linux x86_64)');
  });

  it('decodes bytes that are valid UTF-8, astral characters included', () => {
    expect(headerText(asNodeReadsIt('https://例え.jp/パス?q=ü'), 'url')).toBe('https://例え.jp/パス?q=ü');
    expect(headerText(asNodeReadsIt('Agent 🚀 é'))).toBe('Agent 🚀 é');
  });

  it('percent-encodes the bytes of a URL that is no UTF-8, and puts U+FFFD for invalid sequences of other text', () => {
    const latin1Cafe = Buffer.concat([Buffer.from('https://x.example/caf'), Buffer.from([0xe9]), Buffer.from('/中')]);
    expect(headerText(asNodeReadsIt(latin1Cafe), 'url')).toBe('https://x.example/caf%E9/%E4%B8%AD');
    expect(headerText(asNodeReadsIt(Buffer.concat([Buffer.from('UA/'), Buffer.from([0xff, 0xfe]), Buffer.from(' 中')])))).toBe('UA/\ufffd\ufffd 中');
    // A sequence cut short: one replacement, the rest kept.
    expect(headerText(asNodeReadsIt(Buffer.from([0x61, 0xe4, 0xb8, 0x62])))).toBe('a\ufffdb');
  });

  it('keeps a value that holds a character beyond Latin-1: it is text already, not bytes', () => {
    expect(headerText('Ünïcode 中文')).toBe('Ünïcode 中文');
  });
});

describe('visitText', () => {
  it('decodes headers, cuts to the column and never splits a surrogate pair', () => {
    expect(visitText(undefined, 'referrer')).toBe('');
    expect(visitText(asNodeReadsIt('https://ex.org/é'), 'referrer')).toBe('https://ex.org/é');
    const max = VISIT_TEXT_MAX.user_agent;
    const long = `${'a'.repeat(max - 1)}🚀🚀`;
    const cut = visitText(asNodeReadsIt(long), 'user_agent');
    expect(cut).toBe('a'.repeat(max - 1));
    expect(visitText('b'.repeat(max + 5), 'user_agent')).toHaveLength(max);
  });

  it('takes the query as it is (Node refuses a request target with bytes beyond ASCII)', () => {
    expect(visitText('utm_source=%C3%A9', 'query')).toBe('utm_source=%C3%A9');
  });
});
