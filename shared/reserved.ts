/**
 * Reserved, not live: everything the API contract (link-tracking API v1) makes the platform list,
 * accept or answer although no feature of this platform does it yet. Most of it belongs to the
 * neighbouring service ("swarm") API, whose error codes, rate buckets and three route names the
 * contract shares with ours. Each entry says which line of the contract requires it and what,
 * today, is true of it. The live catalogues compose these lists: the error catalogue
 * (`shared/errors.ts`), the event types (`shared/events/events.ts`), the rate buckets
 * (`shared/config.ts`), the token scopes (`shared/http/scopes.ts`) and the 501 routes
 * (`services/api/reserved/reserved.routes.ts`). `shared/reserved.test.ts` checks that no live code
 * raises, emits, requires or applies any of it, so the list stays true: when a feature starts
 * using an entry, move the entry into its live catalogue.
 *
 * This module imports nothing, types included: the catalogues that compose it load it first, and
 * its routes name their buckets from its own reserved list.
 */

/**
 * Error codes of the contract's error table ("Errors") that nothing raises. They stay in the
 * catalogue (`GET /api/v1/errors`, the OpenAPI failure schema, the i18n messages) because the
 * table lists them and codes are stable within a major version; `AppError` does not accept them.
 */
export const RESERVED_ERRORS = {
  // "section, message or knowledge item not visible": the platform has no sections, messages or knowledge items.
  visibility_denied: { status: 403, condition: 'section, message or knowledge item not visible' },
  // "registration without accept_terms=1": registration belongs to the service API; accounts here are created by staff.
  terms_not_accepted: { status: 403, condition: 'registration without accept_terms=1, or terms version changed' },
  // "moderation": agents belong to the service API; nothing here is moderated.
  agent_suspended: { status: 403, condition: 'moderation' },
  // "a sibling section already uses the slug": sections only. A link slug already taken is 409 `conflict`.
  slug_taken: { status: 409, condition: 'a sibling section already uses the slug' },
  // "task already claimed, done or blocked": tasks belong to the service API.
  task_not_claimable: { status: 409, condition: 'task already claimed, done or blocked' },
  // "only the claimant may change the task": tasks belong to the service API.
  task_not_yours: { status: 403, condition: 'only the claimant may change the task' },
  // "same as above" (payload_too_large): every body or field over a limit is answered 413 `payload_too_large`.
  too_large: { status: 413, condition: 'same as payload_too_large' },
  // "section nesting deeper than 6" (and Limits, rule 7): sections only.
  depth_exceeded: { status: 422, condition: 'section nesting deeper than 6; details has parent_depth and max' },
  // "locked or archived section": sections only.
  section_locked: { status: 423, condition: 'locked or archived section' },
} as const satisfies Record<string, { status: number; condition: string }>;

export type ReservedErrorCode = keyof typeof RESERVED_ERRORS;

/**
 * Webhook events of the contract's event table ("Events") marked "no; subscription is accepted,
 * emitter comes later": a webhook may subscribe to them (so they are event types and pass
 * validation), and nothing emits them. `EventBus` accepts only live types.
 */
export const RESERVED_EVENT_TYPES = [
  // Would need a prober of link targets; the platform never requests a target.
  'link.target_down',
  // Tasks belong to the service API.
  'agent.task',
] as const;

/**
 * Rate buckets of the contract's limits table ("Limits": swarm register, read and write). They are
 * configured (`RATE_LIMIT_SWARM_*`) and reported live by `GET /api/v1/status`, as the table
 * requires; they apply only to the reserved routes below, which answer 501 before doing any work.
 * Agent tokens, by which two of them are keyed, do not exist here: callers are keyed by IP.
 */
export const RESERVED_RATE_BUCKETS = {
  swarm_register: { env: 'RATE_LIMIT_SWARM_REGISTER', fallback: '20:3600', keyedBy: 'IP' },
  swarm_read: { env: 'RATE_LIMIT_SWARM_READ', fallback: '3000:60', keyedBy: 'agent token, then IP' },
  swarm_write: { env: 'RATE_LIMIT_SWARM_WRITE', fallback: '600:60', keyedBy: 'agent token, then IP' },
} as const;

export type ReservedRateBucket = keyof typeof RESERVED_RATE_BUCKETS;

/**
 * The service API's routes the contract names without shapes ("Other": "Only `/agents/recover`,
 * `/agents/heartbeat` and `/knowledge/post` are named"). They are registered so that a client gets
 * a stable 501 `not_implemented` ("route registered, handler not yet present"), not a 404, counted
 * in their swarm bucket; the contract tests leave them out for that reason (tag `swarm`).
 */
export const RESERVED_ROUTES = [
  {
    operationId: 'swarmAgentRecover',
    method: 'POST',
    path: '/agents/recover',
    summary: 'Agent recovery (swarm API; not implemented: 501)',
    bucket: 'swarm_register',
  },
  {
    operationId: 'swarmAgentHeartbeat',
    method: 'POST',
    path: '/agents/heartbeat',
    summary: 'Agent heartbeat (swarm API; not implemented: 501)',
    bucket: 'swarm_write',
  },
  {
    operationId: 'swarmKnowledgePost',
    method: 'POST',
    path: '/knowledge/post',
    summary: 'Post a knowledge item (swarm API; not implemented: 501)',
    bucket: 'swarm_write',
  },
] as const satisfies readonly { operationId: string; method: 'POST'; path: string; summary: string; bucket: ReservedRateBucket }[];

/**
 * Token scopes of the contract ("API token": scopes) that no route requires. A token may be
 * minted with them (the contract lists them), and they grant nothing.
 */
export const RESERVED_SCOPES = [
  // None today: `team:read` went live with teams (issue 39).
] as const;
