import { describe, expect, it } from 'vitest';
import { JsonArrayItems } from './exports.service.js';

describe('JsonArrayItems', () => {
  const rows = ['{"a":1,"s":"x\\ny"}', '{"a":2,"s":"é"}', '{"a":3,"s":""}'];
  const eachRow = Buffer.from(rows.map((row) => `${row}\n`).join(''));

  it('joins JSONEachRow rows with commas and counts them, across slices', () => {
    const items = new JsonArrayItems();
    const text = Buffer.concat([items.of(eachRow), items.of(Buffer.from('{"a":4}\n'))]).toString();
    expect(JSON.parse(`[${text}\n]`)).toEqual([...rows.map((row) => JSON.parse(row)), { a: 4 }]);
    expect(items.count).toBe(4);
  });

  it('gives the same bytes whatever the chunk boundaries, inside a row or a character included', () => {
    const whole = new JsonArrayItems().of(eachRow);
    for (let cut = 1; cut < eachRow.length; cut++) {
      const items = new JsonArrayItems();
      const joined = Buffer.concat([items.of(eachRow.subarray(0, cut)), items.of(eachRow.subarray(cut))]);
      expect(joined.equals(whole), `cut at ${cut}`).toBe(true);
      expect(items.count).toBe(3);
    }
  });

  it('yields nothing and counts nothing for an empty slice', () => {
    const items = new JsonArrayItems();
    expect(items.of(Buffer.alloc(0)).length).toBe(0);
    expect(items.count).toBe(0);
  });
});
