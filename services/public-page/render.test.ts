import { describe, expect, it } from 'vitest';
import { DIMENSIONS } from '#shared/analytics/rollups.js';
import { PUBLIC_DIMENSION_ORDER } from './render.js';

describe('the public page', () => {
  it('shows every dimension of the reports once, in its own order (a dimension added to DIMENSIONS must be placed here)', () => {
    expect(new Set(PUBLIC_DIMENSION_ORDER).size).toBe(PUBLIC_DIMENSION_ORDER.length);
    expect([...PUBLIC_DIMENSION_ORDER].sort()).toEqual([...DIMENSIONS].sort());
  });
});
