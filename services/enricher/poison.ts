import { StageFailure } from './stages.js';

/**
 * Poison messages (issue 24): a batch that fails because of one of its messages is handled again in
 * halves until that message is alone, and only it goes to the dead-letter topic; a batch that fails
 * for any other reason (a store down, a timeout) is redelivered whole, as before. Nothing here runs
 * unless a batch failed.
 */

/**
 * ClickHouse errors about the data of an insert or a query's parameters, by code (the codes are
 * stable, their names checked with chDB 26.7's `errorCodeToName`). A closed list: anything else —
 * TOO_MANY_PARTS, READONLY, TIMEOUT_EXCEEDED, MEMORY_LIMIT_EXCEEDED, UNKNOWN_TABLE… — is systemic.
 */
export const CLICKHOUSE_DATA_ERRORS: Readonly<Record<number, string>> = Object.freeze({
  6: 'CANNOT_PARSE_TEXT',
  25: 'CANNOT_PARSE_ESCAPE_SEQUENCE',
  26: 'CANNOT_PARSE_QUOTED_STRING',
  27: 'CANNOT_PARSE_INPUT_ASSERTION_FAILED',
  38: 'CANNOT_PARSE_DATE',
  41: 'CANNOT_PARSE_DATETIME',
  53: 'TYPE_MISMATCH',
  69: 'ARGUMENT_OUT_OF_BOUND',
  70: 'CANNOT_CONVERT_TYPE',
  72: 'CANNOT_PARSE_NUMBER',
  117: 'INCORRECT_DATA',
  130: 'CANNOT_READ_ARRAY_FROM_TEXT',
  131: 'TOO_LARGE_STRING_SIZE',
  190: 'SIZES_OF_ARRAYS_DONT_MATCH',
  321: 'VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE',
  349: 'CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN',
  376: 'CANNOT_PARSE_UUID',
  407: 'DECIMAL_OVERFLOW',
  441: 'CANNOT_PARSE_DOMAIN_VALUE_FROM_STRING',
  467: 'CANNOT_PARSE_BOOL',
  675: 'CANNOT_PARSE_IPV4',
  676: 'CANNOT_PARSE_IPV6',
  691: 'UNKNOWN_ELEMENT_OF_ENUM',
});

/** JavaScript errors that code throws on data it cannot handle (a programming error on that data). */
const DATA_ERROR_CLASSES = [TypeError, RangeError, SyntaxError, URIError];

/** The ClickHouse code of an error: `code` ('27', @clickhouse/client), `clickhouseCode` (27, chDB) or the `Code: 27.` its text starts with. */
function clickHouseCode(error: Error & { code?: unknown; clickhouseCode?: unknown }): number | undefined {
  if (typeof error.clickhouseCode === 'number') return error.clickhouseCode;
  if (typeof error.code === 'string' && /^\d{1,4}$/.test(error.code)) return Number(error.code);
  const match = /^Code: (\d+)\./.exec(error.message);
  return match ? Number(match[1]) : undefined;
}

/** An error of the operating system or the network (`ECONNREFUSED`, undici's `UND_ERR_…`): never a message's fault. */
const isSystemError = (code: unknown) => typeof code === 'string' && /^(E[A-Z0-9]+|UND_ERR_[A-Z_]+)$/.test(code);

/**
 * Whether an error was caused by the messages being handled rather than by the platform: a
 * ClickHouse data error (CLICKHOUSE_DATA_ERRORS), a Postgres data exception (SQLSTATE class 22: a
 * value that is no date, text holding U+0000…), or a TypeError, RangeError, SyntaxError or URIError
 * (code meeting data it cannot handle). Anything else — and any error caused by a network or system
 * error (undici's `fetch failed` is a TypeError) — is systemic: its batch is redelivered, never
 * dead-lettered.
 */
export function causedByMessage(error: unknown): boolean {
  if (error instanceof StageFailure) return causedByMessage(error.error);
  if (!(error instanceof Error)) return false;
  const coded = error as Error & { code?: unknown; severity?: unknown };
  for (let cause: unknown = error, depth = 0; cause instanceof Error && depth < 5; cause = cause.cause, depth++) {
    if (isSystemError((cause as { code?: unknown }).code)) return false;
  }
  // pg and PGlite errors carry the SQLSTATE and a severity.
  if (typeof coded.severity === 'string' && typeof coded.code === 'string' && /^[0-9A-Z]{5}$/.test(coded.code)) return coded.code.startsWith('22');
  const code = clickHouseCode(coded);
  if (code !== undefined) return code in CLICKHOUSE_DATA_ERRORS;
  return DATA_ERROR_CLASSES.some((kind) => error instanceof kind);
}

/**
 * Messages that failed one after the other, alone, with no message of the batch handled between
 * them, past which the failure is taken for systemic: a fault every message meets (a bug that throws
 * a TypeError on every visit) must stop its partition, not empty it into the dead-letter topic.
 */
export const POISON_RUN_MAX = 8;

/** A message that failed on its own, with its failure. */
export interface Poison<T> {
  message: T;
  failure: StageFailure;
}

/** The reason a poison message is dead-lettered with (`x-dlq-reason`): the stage and the error's first line, within 500 characters. */
export function poisonReason({ stage, error }: StageFailure): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return `${stage} stage failed: ${text.split('\n', 1)[0]}`.slice(0, 500);
}

/**
 * Isolates the poison messages of a batch that failed: if the failure was caused by a message
 * (causedByMessage), the batch is handled again in halves, one after the other, each half that
 * fails in halves again, down to single messages; the messages that still fail alone are returned,
 * to be dead-lettered (by the caller, once the rest is handled). `handle` handles a part as a
 * redelivered batch (what of it is stored is left out) and rejects with a StageFailure where it can.
 *
 * Throws the stage's own error, for the batch to be redelivered whole, when the failure is systemic:
 * the batch's failure or any part's, or POISON_RUN_MAX messages (all of a smaller batch) failing in
 * a row. A batch of N messages with one poison is handled about 2·log2(N) times.
 */
export async function isolatePoison<T>(messages: T[], failure: unknown, handle: (part: T[]) => Promise<void>): Promise<Poison<T>[]> {
  const failed = failure instanceof StageFailure ? failure : new StageFailure('handler', failure);
  if (!causedByMessage(failed)) throw failed.error;
  if (messages.length <= 1) return messages.map((message) => ({ message, failure: failed }));
  const poisons: Poison<T>[] = [];
  const runMax = Math.min(messages.length, POISON_RUN_MAX);
  let run = 0;
  const split = async (part: T[]): Promise<void> => {
    const middle = Math.ceil(part.length / 2);
    for (const half of [part.slice(0, middle), part.slice(middle)]) {
      try {
        await handle(half);
        run = 0;
      } catch (error) {
        const own = error instanceof StageFailure ? error : new StageFailure('handler', error);
        if (!causedByMessage(own)) throw own.error;
        if (half.length > 1) {
          await split(half);
          continue;
        }
        poisons.push({ message: half[0]!, failure: own });
        if (++run >= runMax) {
          // eslint-disable-next-line preserve-caught-error -- the cause is the message's own error, unwrapped from its StageFailure
          throw new Error(`${run} messages in a row failed alone (${own.message}): taken for a systemic fault, the batch is redelivered`, { cause: own.error });
        }
      }
    }
  };
  await split(messages);
  return poisons;
}
