import { z } from 'zod';
import { ERROR_CODES, errorDocs, type ErrorCode, type ErrorDetails } from '../errors.js';

/** The `meta` every response carries. Collections add the pagination fields. */
export interface Meta {
  request_id: string;
  server_time_utc: string;
  took_ms: number;
  [extra: string]: unknown;
}

/** Builds the meta of a response that is about to be sent. */
export function buildMeta(requestId: string, tookMs: number, extra: Record<string, unknown> = {}): Meta {
  return { request_id: requestId, server_time_utc: new Date().toISOString(), took_ms: Math.max(0, Math.round(tookMs)), ...extra };
}

/** Success envelope. */
export function success<T>(data: T, meta: Meta): { ok: true; data: T; meta: Meta } {
  return { ok: true, data, meta };
}

export interface ErrorObject {
  code: ErrorCode;
  message: string;
  details: ErrorDetails;
  request_id: string;
  docs: string;
}

/** Failure envelope. */
export function failure(code: ErrorCode, message: string, details: ErrorDetails, meta: Meta): { ok: false; error: ErrorObject; meta: Meta } {
  return { ok: false, error: { code, message, details, request_id: meta.request_id, docs: errorDocs(code) }, meta };
}

export const MetaSchema = z
  .object({
    request_id: z.string().meta({ description: 'Same value as the X-Request-Id header and the access log line.' }),
    server_time_utc: z.iso.datetime().meta({ description: 'Server time in ISO 8601 UTC.' }),
    took_ms: z.number().int().min(0).meta({ description: 'Time spent on the request, in milliseconds.' }),
  })
  .catchall(z.unknown())
  .meta({ id: 'Meta' });

/** The failure envelope schema for a set of codes (all codes when none given). */
export function failureSchema(codes: readonly ErrorCode[] = ERROR_CODES) {
  return z.object({
    ok: z.literal(false),
    error: z.object({
      code: z.enum(codes as [ErrorCode, ...ErrorCode[]]).meta({ description: 'Stable machine code; see GET /api/v1/errors.' }),
      message: z.string().meta({ description: 'Localised text (see ?lang= and Accept-Language).' }),
      details: z.record(z.string(), z.unknown()).meta({
        description:
          'Extra data. For validation_error it maps each field to its rule; missing_parameter lists `missing`; bad_request lists `unknown` parameters.',
      }),
      request_id: z.string(),
      docs: z.string().meta({ description: 'Path of the error reference for this code.' }),
    }),
    meta: MetaSchema,
  });
}

/** The success envelope schema around a data schema; `meta` when the operation adds fields to Meta (a collection's PageMeta). */
export function successSchema<T extends z.ZodType>(data: T, meta: z.ZodType = MetaSchema) {
  return z.object({ ok: z.literal(true), data, meta });
}
