import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';

/**
 * How deep a request's JSON may nest (objects and arrays). The deepest body any route declares
 * nests 3 levels; past this, a body is refused before it is parsed, so nothing that walks it
 * (validation, logging) can run out of stack on a crafted `[[[[…]]]]`.
 */
export const MAX_JSON_DEPTH = 32;

/**
 * True when `text` nests objects or arrays deeper than `max`: one pass over the characters, brackets
 * inside strings left out, no recursion and no allocation, whatever the input (it is the check that
 * runs before JSON.parse).
 */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const char = text.charCodeAt(i);
    if (inString) {
      if (char === 0x5c /* \ */) i++;
      else if (char === 0x22 /* " */) inString = false;
    } else if (char === 0x22) inString = true;
    else if (char === 0x7b /* { */ || char === 0x5b /* [ */) {
      if (++depth > max) return true;
    } else if ((char === 0x7d /* } */ || char === 0x5d) /* ] */ && depth > 0) depth--;
  }
  return false;
}

/** The refusal of a JSON text nested deeper than MAX_JSON_DEPTH. */
function tooDeep(part: string): AppError {
  return new AppError(
    'bad_request',
    { [part]: 'nested too deeply', max_depth: MAX_JSON_DEPTH },
    { messageKey: 'error.bad_request.json_too_deep', params: { max: MAX_JSON_DEPTH } },
  );
}

/**
 * Parses a JSON text a client sent outside the body (a query parameter), refusing one nested deeper
 * than MAX_JSON_DEPTH with 400 `bad_request`; undefined when it is not JSON.
 */
export function parseClientJson(text: string, part: string): { value: unknown } | undefined {
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) throw tooDeep(part);
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return undefined;
  }
}

/** Charset labels of UTF-8 (the WHATWG Encoding Standard's two common ones). */
const UTF8_LABELS = new Set(['utf-8', 'utf8']);

/**
 * The `charset` parameter of a Content-Type, lower-cased and unquoted, or undefined without one. A
 * parameter name is case-insensitive; a value may be a quoted string (RFC 9110, 5.6.6).
 */
export function charsetOf(contentType: string): string | undefined {
  for (const parameter of contentType.split(';').slice(1)) {
    const equals = parameter.indexOf('=');
    if (equals < 0 || parameter.slice(0, equals).trim().toLowerCase() !== 'charset') continue;
    const value = parameter.slice(equals + 1).trim();
    return (value.startsWith('"') && value.endsWith('"') && value.length >= 2 ? value.slice(1, -1) : value).toLowerCase();
  }
  return undefined;
}

/**
 * Refuses a text body declared in a charset other than UTF-8 (400 `bad_request`, as an unsupported
 * content type is): the platform decodes every body as UTF-8 and would otherwise read UTF-7 or
 * Latin-1 bytes as something the client did not send. No charset means UTF-8.
 */
export function assertUtf8Body(request: FastifyRequest): void {
  const contentType = request.headers['content-type'];
  const charset = typeof contentType === 'string' ? charsetOf(contentType) : undefined;
  if (charset !== undefined && !UTF8_LABELS.has(charset)) {
    throw new AppError(
      'bad_request',
      { content_type: 'unsupported charset', charset: charset.slice(0, 40) },
      { messageKey: 'error.bad_request.unsupported_charset', params: { charset: charset.slice(0, 40) } },
    );
  }
}

type Poisoning = 'error' | 'ignore' | 'remove';
type BodyParser = (request: FastifyRequest, body: string, done: (error: Error | null, body?: unknown) => void) => void;

/**
 * A JSON body parser that checks before it parses: the charset (UTF-8 only) and the nesting depth
 * (MAX_JSON_DEPTH, over the raw text, before JSON.parse or anything recursive sees it), then
 * Fastify's own parser (prototype-poisoning rules `proto` and `constructor`). An empty body is
 * handed on as Fastify would.
 */
export function strictJsonParser(app: FastifyInstance, proto: Poisoning, constructor: Poisoning): BodyParser {
  const parse = app.getDefaultJsonParser(proto, constructor) as BodyParser;
  return (request, body, done) => {
    try {
      assertUtf8Body(request);
      if (nestsDeeperThan(body, MAX_JSON_DEPTH)) throw tooDeep('body');
    } catch (error) {
      done(error as Error);
      return;
    }
    parse(request, body, done);
  };
}

/**
 * Puts strictJsonParser in the place of Fastify's `application/json` parser on an app (every
 * JSON body of the API and of the ingest edge goes through it), with Fastify's default
 * prototype-poisoning rules (refused).
 */
export function useStrictJson(app: FastifyInstance): void {
  const parser = strictJsonParser(app, 'error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parser);
}
