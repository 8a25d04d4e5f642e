import { describe, expect, it } from 'vitest';
import { ipInRanges, normalizeRange, rangeWithin } from './ip.js';

describe('IP ranges', () => {
  it('normalises an IP or CIDR to its network', () => {
    expect(normalizeRange('203.0.113.7')).toBe('203.0.113.7/32');
    expect(normalizeRange('10.1.2.3/8')).toBe('10.0.0.0/8');
    expect(normalizeRange('2001:db8::1/32')).toBe('2001:db8::/32');
    expect(normalizeRange('10.0.0.0/33')).toBeUndefined();
  });

  it('matches an address against ranges, IPv4-mapped IPv6 as IPv4', () => {
    expect(ipInRanges('::ffff:203.0.113.10', ['203.0.113.0/24'])).toBe(true);
    expect(ipInRanges('198.51.100.1', ['203.0.113.0/24'])).toBe(false);
  });

  it('tells whether a range lies wholly inside one of the ranges (a minted token no wider than its minter)', () => {
    const outer = ['203.0.113.0/24', '2001:db8::/32'];
    for (const inside of ['203.0.113.0/24', '203.0.113.128/25', '203.0.113.7', '2001:db8:1::/48', '2001:db8::1'])
      expect(rangeWithin(inside, outer), inside).toBe(true);
    for (const outside of ['203.0.113.0/23', '203.0.112.0/24', '0.0.0.0/0', '2001:db8::/31', '::/0', '198.51.100.7', 'not a range']) {
      expect(rangeWithin(outside, outer), outside).toBe(false);
    }
    expect(rangeWithin('10.0.0.1', [])).toBe(false);
  });
});
