import { describe, expect, it } from 'vitest';
import { checkTargetUrl, isPlatformHost, shortUrl } from './urls.js';

const config = { publicUrl: 'https://api.example.net', baseDomain: 'lnk.example.com' };

describe('shortUrl', () => {
  it('puts the subdomain under the base domain with the scheme and port of PUBLIC_URL', () => {
    expect(shortUrl(config, 'alice', 'sale')).toBe('https://alice.lnk.example.com/sale');
    expect(shortUrl({ publicUrl: 'http://localhost:8080', baseDomain: 'localhost' }, 'bob', 'x')).toBe('http://bob.localhost:8080/x');
  });
});

describe('isPlatformHost', () => {
  it.each([
    ['lnk.example.com', true],
    ['alice.lnk.example.com', true],
    ['ALICE.LNK.EXAMPLE.COM.', true],
    ['api.example.net', true],
    ['evil-lnk.example.com', false],
    ['lnk.example.com.evil.org', false],
    ['example.com', false],
    ['localhost', true],
    ['127.0.0.1', true],
    ['127.8.9.10', true],
    ['[::1]', true],
    ['0.0.0.0', true],
    ['[::ffff:127.0.0.1]', true],
    ['10.0.0.1', false],
  ])('%s → %s', (host, expected) => {
    expect(isPlatformHost(host, config)).toBe(expected);
  });
});

describe('checkTargetUrl', () => {
  it('normalises scheme, host and default port; refuses internationalised hosts in either form (lookalikes)', () => {
    expect(checkTargetUrl('HTTPS://WWW.Example.org:443/a', config)).toEqual({ ok: true, url: 'https://www.example.org/a' });
    expect(checkTargetUrl('https://example.org', config)).toEqual({ ok: true, url: 'https://example.org/' });
    expect(checkTargetUrl('http://münchen.example/', config).ok).toBe(false);
    expect(checkTargetUrl('http://xn--mnchen-3ya.example/', config).ok).toBe(false);
    // Every value of the pattern parses (punycode that would not decode never reaches the parser).
    expect(checkTargetUrl('http://xn--a.example/', config).ok).toBe(false);
  });

  it.each([
    'javascript:alert(1)',
    'JaVaScRiPt:alert(1)',
    'vbscript:msgbox(1)',
    'data:text/html;base64,PHNjcmlwdD4=',
    'file:///etc/passwd',
    'mailto:a@example.com',
    'https://a:b@example.org/',
    'https://a@example.org/',
    'https://alice.lnk.example.com/x',
    'https://api.example.net/api/v1/',
    'https://example.org/\u0000',
    'https://exa mple.org/',
    'not a url',
    '//example.org/protocol-relative',
  ])('refuses %j', (input) => {
    expect(checkTargetUrl(input, config).ok).toBe(false);
  });

  it('refuses a target longer than 2048 characters once normalised (the pattern admits only characters kept as they are)', () => {
    expect(checkTargetUrl(`https://example.org/${'ä'.repeat(400)}`, config).ok).toBe(false);
    const longest = `https://example.org/${'a'.repeat(2047 - 'https://example.org/'.length)}`;
    expect(checkTargetUrl(longest, config)).toEqual({ ok: true, url: longest });
    expect(checkTargetUrl(`https://example.org/${'a'.repeat(2048)}`, config).ok).toBe(false);
  });
});
