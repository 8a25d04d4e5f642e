// The A/B split's choice of variant (issue 40 item 3): sticky per visitor, spread by weight, and
// independent between links; and the rules' first match, from the tests made once per rule list.
import { describe, expect, it } from 'vitest';
import { firstLanguage, firstMatchingRule, matches, type RuleFacts } from './rule-match.js';
import { variantHash, variantOf } from './rules.js';

const agent = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
/** Addresses as traffic has them: neighbours differing in their last bits. */
const addresses = Array.from({ length: 30_000 }, (_, index) => `10.${(index >> 16) & 255}.${(index >> 8) & 255}.${index & 255}`);

describe('variantOf', () => {
  it('gives one visitor the same variant every time, and spreads visitors by weight (within 1.5 points)', () => {
    const variants = [1, 2, 7].map((weight, index) => ({ target_url: `https://example.com/v${index}`, weight }));
    const counts = [0, 0, 0];
    for (const ip of addresses) {
      const chosen = variantOf('0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b', variants, ip, agent);
      expect(variantOf('0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b', variants, ip, agent)).toBe(chosen);
      counts[chosen]!++;
    }
    const shares = counts.map((count) => count / addresses.length);
    [0.1, 0.2, 0.7].forEach((expected, index) => expect(Math.abs(shares[index]! - expected)).toBeLessThan(0.015));
  });

  it('chooses independently per link: a visitor on the first variant of one split is on any of another', () => {
    const variants = [1, 1].map((weight, index) => ({ target_url: `https://example.com/v${index}`, weight }));
    const agree = addresses.filter((ip) => variantOf('link-a', variants, ip, agent) === variantOf('link-b', variants, ip, agent)).length;
    expect(Math.abs(agree / addresses.length - 0.5)).toBeLessThan(0.015);
  });

  it('separates its inputs: moving characters between the link id, the address and the agent changes the hash', () => {
    expect(variantHash('ab', 'c', agent)).not.toBe(variantHash('a', 'bc', agent));
    expect(variantHash('a', 'b', 'c')).not.toBe(variantHash('a', '', 'bc'));
    expect(variantHash('a', 'b', 'c')).toBe(variantHash('a', 'b', 'c'));
    expect(variantHash('a', 'b', 'c')).toBeGreaterThanOrEqual(0);
  });
});

describe('firstMatchingRule', () => {
  const facts = (values: Partial<Record<'device' | 'os' | 'browser' | 'country' | 'language', string>>, query = ''): RuleFacts => ({
    device: () => values.device ?? '',
    os: () => values.os ?? '',
    browser: () => values.browser ?? '',
    country: () => values.country ?? '',
    language: () => values.language ?? '',
    at: Date.UTC(2026, 10, 29, 12, 0),
    query,
  });
  const rules = [
    { condition: { type: 'os' as const, values: ['iOS'] } },
    { condition: { type: 'device' as const, values: ['Desktop'] } },
    { condition: { type: 'query' as const, name: 'go' } },
  ];

  it('takes the first rule met, in any case of the values, and the same list again from its kept tests', () => {
    expect(firstMatchingRule(rules, facts({ os: 'ios', device: 'mobile' }))).toBe(0);
    expect(firstMatchingRule(rules, facts({ os: 'Windows' }))).toBe(1); // no device type is a desktop
    expect(firstMatchingRule(rules, facts({ os: 'Android', device: 'mobile' }, 'a=1&go'))).toBe(2);
    expect(firstMatchingRule(rules, facts({ os: 'Android', device: 'mobile' }))).toBe(-1);
  });

  it('a new list is tested as it is now, and matches() agrees with it', () => {
    const changed = [{ condition: { type: 'os' as const, values: ['Android'] } }];
    expect(firstMatchingRule(changed, facts({ os: 'android' }))).toBe(0);
    expect(matches(changed[0]!.condition, facts({ os: 'ANDROID' }))).toBe(true);
    expect(matches({ type: 'country', values: ['de'] }, facts({ country: '' }))).toBe(false);
  });
});

describe('firstLanguage', () => {
  it("reads the first tag's language as the regular expression /^\\s*([A-Za-z]{2,3})\\b/ does, lower case", () => {
    const headers = ['de-CH,de;q=0.9', 'en', ' FR;q=0.8', '\tes,en', 'eng', 'english', 'de_CH', 'de1', 'x', '', '*', 'zh-Hant-TW', 'gsw-CH', 'ja ', 'é'];
    for (const header of headers) expect(firstLanguage(header), header).toBe(/^\s*([A-Za-z]{2,3})\b/.exec(header)?.[1]!.toLowerCase() ?? '');
  });
});

describe('a query condition', () => {
  const at = Date.UTC(2026, 10, 29);
  const facts = (query: string): RuleFacts => ({ device: () => '', os: () => '', browser: () => '', country: () => '', language: () => '', at, query });
  /** What the condition means, said with URLSearchParams: a parameter of that decoded name (and value). */
  const meant = (query: string, name: string, value?: string) => {
    try {
      return new URLSearchParams(query).getAll(name).some((found) => value === undefined || found === value);
    } catch {
      return false;
    }
  };
  it('finds a parameter by its decoded name, and by its decoded value, as URLSearchParams reads the query', () => {
    const queries = [
      'go',
      'go=1',
      'a=1&go',
      'a=1&go=',
      'ago=1',
      'go2=1',
      'g%6F=1',
      'g+o=1',
      'g%20o=yes',
      'go=a+b',
      'go=a%20b',
      'go=%E2%82%AC',
      '&&go=1&',
      'x=1&go=2&go=3',
      'go=%zz',
      '=1',
      '',
    ];
    const conditions = [
      { name: 'go' },
      { name: 'go', value: '1' },
      { name: 'go', value: '3' },
      { name: 'g o' },
      { name: 'g o', value: 'yes' },
      { name: 'go', value: 'a b' },
      { name: 'go', value: '€' },
      { name: 'go', value: '' },
    ];
    for (const query of queries)
      for (const { name, value } of conditions)
        expect(matches({ type: 'query', name, value }, facts(query)), `${query} ${name}=${value}`).toBe(query !== '' && meant(query, name, value));
  });
});
