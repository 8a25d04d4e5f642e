import { z } from 'zod';
import { collectionMeta, cursorParam, PageMetaSchema, pagingQuery } from '#shared/http/pagination.js';
import { integerParam } from '#shared/http/fields.js';
import { assertNoBody } from '#shared/http/register.js';
import { defineRoute, type RouteDef } from '#shared/http/route.js';
import { DLQ_SOURCES } from '#shared/message-log/dead-letters.js';
import { DEAD_LETTER_CURSOR, type DeadLettersService, REPLAY_CHUNK } from './dead-letters.service.js';

const tags = ['admin'];

export const DeadLetterSchema = z
  .object({
    id: z
      .string()
      .regex(/^(?:0|[1-9][0-9]*)-(?:0|[1-9][0-9]*)$/)
      .meta({ description: 'Where it sits in `visits.dlq`: `<partition>-<offset>`.' }),
    partition: z.number().int().min(0),
    offset: z.number().int().min(0),
    source_topic: z.enum(DLQ_SOURCES).nullable().meta({
      description:
        'The topic it came from and a replay republishes it to (`x-dlq-source`); null when its header names no such topic (a replay passes it over).',
    }),
    reason: z.string().nullable().meta({ description: 'Why it was dead-lettered (`x-dlq-reason`), e.g. `undecodable JSON` or `invalid visit: visit_id: …`.' }),
    dead_lettered_at: z.iso
      .datetime()
      .nullable()
      .meta({ description: 'When it was dead-lettered (`x-dlq-at`; else, on Kafka, the record time); null when unknown.' }),
    key: z.string().meta({ description: 'The message key (the link id for visits).' }),
    message: z
      .string()
      .meta({ description: 'The message text as it was published (NUL and unpaired surrogates shown as U+FFFD; a replay sends the original).' }),
    headers: z.record(z.string(), z.string()).meta({ description: "The message's own headers (the `x-dlq-*` ones are left out)." }),
    replays: z.number().int().min(0).meta({ description: 'How many times it was replayed before and came back (`x-dlq-replays`).' }),
  })
  .meta({ id: 'DeadLetter' });

const ReplayResultSchema = z
  .object({
    replayed: z.number().int().min(0).meta({ description: 'Dead letters republished to their source topic.' }),
    skipped: z.number().int().min(0).meta({ description: 'Dead letters passed over: their source names no topic a dead letter comes from.' }),
    pending: z.number().int().min(0).meta({ description: 'Dead letters pending once the replay ended.' }),
  })
  .meta({ id: 'DeadLetterReplay' });

const STAFF = '(staff only: a staff session, or a token with the admin scope)';

/** The dead-letter topic for staff: inspect the pending dead letters and replay them. */
export function deadLettersRoutes(service: DeadLettersService): RouteDef[] {
  return [
    defineRoute({
      operationId: 'listDeadLetters',
      method: 'GET',
      path: '/api/v1/admin/dead-letters',
      summary: `List the pending dead letters of visits.dlq, oldest first ${STAFF}`,
      description:
        'Messages of `visits.raw` and `tracker.raw` the enricher could not decode or validate go to `visits.dlq` with their reason. ' +
        'Pending are those not yet replayed: after the position of the `dlq-replay` consumer group, which only ' +
        'POST /api/v1/admin/dead-letters/replay moves; reading this list moves nothing. Oldest first (the order of the log, and of a ' +
        'replay; on Kafka the partitions are merged by record time), so that new dead letters never shift a walk: `data.dead_letters`, ' +
        'and `meta` with `count`, `total` (every pending dead letter), `limit`, `cursor`, `next_cursor` and `has_more`. Ask for the next ' +
        'page with `?cursor=<next_cursor>`. Every value of the cursor pattern is a position: one past the end gives an empty page. ' +
        "Retention bounds the topic (VISIT_LOG_CAPACITY embedded, the topic's retention on Kafka): the oldest dead letters can go unreplayed.",
      tags,
      auth: { kind: 'scope', scope: 'admin' },
      bucket: 'api',
      query: z.object({ limit: pagingQuery.limit, cursor: cursorParam(DEAD_LETTER_CURSOR) }),
      response: z.object({ dead_letters: z.array(DeadLetterSchema) }),
      meta: PageMetaSchema,
      handler: async ({ query, respond }) => {
        const page = await service.list(query.limit, query.cursor);
        respond.meta(collectionMeta(page.items.length, page.total, { limit: query.limit, cursor: query.cursor }, page.next));
        return { dead_letters: page.items };
      },
    }),
    defineRoute({
      operationId: 'replayDeadLetters',
      method: 'POST',
      path: '/api/v1/admin/dead-letters/replay',
      summary: `Replay the pending dead letters to the topics they came from ${STAFF}`,
      description:
        'Republishes pending dead letters, oldest first (all of them, or the first `limit`), each to its source topic with its key, ' +
        'value and own headers (plus `x-dlq-replays`, the count of replays), and moves the `dlq-replay` group past them: they leave ' +
        `the list. ${REPLAY_CHUNK} at a time, each batch committed once republished: an interrupted replay (503) leaves the rest pending ` +
        '(`details.replayed` says how many went). A replayed message the enricher still refuses comes back to the end of the list with ' +
        'its reason and `replays` one higher; one replay takes only the dead letters pending when it starts, so it never loops on one. ' +
        'A message published twice (a replay whose commit failed) is stored once: the enricher deduplicates visits by id. ' +
        'It takes no request body: send none (or `{}`); any field is refused with 400 `bad_request`.',
      tags,
      auth: { kind: 'scope', scope: 'admin' },
      bucket: 'api',
      query: z.object({
        limit: integerParam(1, 1_000_000).optional().meta({ description: 'Replay at most this many, the oldest; without it, every pending dead letter.' }),
      }),
      response: ReplayResultSchema,
      handler: async ({ query, request }) => {
        assertNoBody(request.body);
        return service.replay(query.limit);
      },
    }),
  ];
}
