import { describe, expect, it } from 'vitest';
import { redactUrl } from './logger.js';

describe('redactUrl', () => {
  it('replaces the value of a token, secret or password parameter in a query or a fragment, escaped or not', () => {
    expect(redactUrl('/login/reset?token=abc_DEF-1')).toBe('/login/reset?token=[redacted]');
    expect(redactUrl('/login/reset#token=abc')).toBe('/login/reset#token=[redacted]');
    expect(redactUrl('/login/reset%23token=abc')).toBe('/login/reset%23token=[redacted]');
    expect(redactUrl('/x?a=1&Token=abc&b=2')).toBe('/x?a=1&Token=[redacted]&b=2');
    expect(redactUrl('/x?secret=s;password=p')).toBe('/x?secret=[redacted];password=[redacted]');
  });

  it('leaves other parameters and URLs without any alone', () => {
    expect(redactUrl('/abc123')).toBe('/abc123');
    expect(redactUrl('/x?utm_source=mail&tokens=3&mytoken=4')).toBe('/x?utm_source=mail&tokens=3&mytoken=4');
  });
});
