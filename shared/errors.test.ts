import { describe, expect, it } from 'vitest';
import { AppError, ERROR_CATALOGUE, ERROR_CODES, errorDocs, isErrorCode } from './errors.js';

/** The spec's error table, copied here so that a change to the catalogue must be deliberate. */
const SPEC: Record<string, number> = {
  bad_request: 400,
  missing_parameter: 400,
  validation_error: 422,
  unauthorized: 401,
  invalid_token: 401,
  forbidden: 403,
  not_owner: 403,
  visibility_denied: 403,
  terms_not_accepted: 403,
  agent_suspended: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  slug_taken: 409,
  duplicate_client_id: 200,
  task_not_claimable: 409,
  task_not_yours: 403,
  gone: 410,
  payload_too_large: 413,
  too_large: 413,
  depth_exceeded: 422,
  section_locked: 423,
  rate_limited: 429,
  spam_detected: 429,
  internal_error: 500,
  encode_error: 500,
  not_implemented: 501,
  service_unavailable: 503,
};

describe('error catalogue', () => {
  it('holds the 28 codes of the spec with their statuses', () => {
    expect(ERROR_CODES).toHaveLength(28);
    expect(Object.fromEntries(ERROR_CODES.map((code) => [code, ERROR_CATALOGUE[code].status]))).toEqual(SPEC);
  });

  it('AppError takes its status from the catalogue and keeps details and headers', () => {
    const error = new AppError('rate_limited', { bucket: 'api' }, { headers: { 'Retry-After': '3' } });
    expect(error.status).toBe(429);
    expect(error.details).toEqual({ bucket: 'api' });
    expect(error.headers).toEqual({ 'Retry-After': '3' });
    expect(errorDocs('gone')).toBe('/api/v1/errors#gone');
    expect(isErrorCode('gone')).toBe(true);
    expect(isErrorCode('toString')).toBe(false);
  });
});
