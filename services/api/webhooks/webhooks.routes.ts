import { z } from 'zod';
import { HTTP_URL } from '#shared/links/urls.js';
import { SUBDOMAIN_NAME_ANY_CASE } from '#shared/links/hosts.js';
import { cursorParam, pageByTime, PageMetaSchema, PAGINATION_NOTE, pagingOf, pagingQuery, TIME_CURSOR } from '#shared/http/pagination.js';
import { defineRoute, type RouteDef } from '#shared/http/route.js';
import { LIVE_EVENT_TYPES } from '#shared/events/events.js';
import { RESERVED_EVENT_TYPES } from '#shared/reserved.js';
import { ALLOWED_PORTS_NOTE } from '#shared/webhooks/guard.js';
import { WEBHOOK_EVENTS } from '#shared/webhooks/delivery.js';
import { MAX_WEBHOOKS_PER_ACCOUNT, type WebhooksService } from './webhooks.service.js';
import { rule } from '#shared/i18n/index.js';

const tags = ['webhooks'];

const urlSchema = z
  .string()
  .max(2047)
  .regex(HTTP_URL, rule('http_url'))
  .meta({
    description:
      'Receiver URL, http or https, without credentials, an ASCII host name or IPv4 address, URL-safe characters (the pattern). Checked by the SSRF guard here and at every attempt: every address the host resolves to must be ' +
      `public (loopback, private, link-local, CGNAT, unique-local, multicast, reserved, unspecified and cloud metadata addresses are refused, also in IPv4-mapped and NAT64 forms); ports ${ALLOWED_PORTS_NOTE}. ` +
      'WEBHOOK_ALLOWLIST admits named internal hosts and ranges. A refusal is 403 `forbidden` (`details.reason` `destination_not_allowed`, ' +
      "the guard's reason in `details.url`). A host name that does not resolve yet is accepted: each delivery resolves it again.",
    example: 'https://hooks.example.com/linktrack',
  });
/** Names as the description lists them: in backquotes, comma-separated. */
const codeList = (names: readonly string[]): string => names.map((name) => `\`${name}\``).join(', ');
const eventsSchema = z
  .array(z.enum(WEBHOOK_EVENTS))
  .min(1)
  .max(WEBHOOK_EVENTS.length)
  .meta({
    description:
      `Events to receive. Emitted: ${codeList(LIVE_EVENT_TYPES)}. Accepted, not yet emitted: ${codeList(RESERVED_EVENT_TYPES)}. ` +
      '`webhook.test` is sent by the test endpoint whatever this list says. An unknown name is 422.',
  });
const subdomainSchema = z.string().regex(SUBDOMAIN_NAME_ANY_CASE, rule('subdomain_name')).nullable().meta({
  description:
    "Only events of this subdomain (one of yours, or a team's where you are an admin or owner: the webhook is then the subdomain owner's, managed by the team's admins and owners too). Without it (or null): events of all your subdomains; only the webhook's owner sets null.",
});
const descriptionSchema = z.string().max(500).trim().nullable();

const WebhookSchema = z
  .object({
    id: z.uuid(),
    url: z.string(),
    events: z.array(z.string()),
    subdomain: z.string().nullable(),
    description: z.string().nullable(),
    secret_prefix: z
      .string()
      .meta({ description: 'The first 12 characters of the secret, to recognise it; the secret itself is shown only at creation and rotation.' }),
    enabled: z.boolean(),
    disabled_at: z.iso.datetime().nullable(),
    disabled_reason: z.string().nullable().meta({
      description: 'Why it was disabled: the fifth failed attempt of a delivery, a 410 Gone answer, or its owner (PATCH enabled=false).',
    }),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'Webhook' });

const SECRET_DOC =
  'The signing secret (`whsec_…`), shown this once: the platform keeps it encrypted (AES-256-GCM) and never shows it again. Every delivery carries `X-Svc-Signature: sha256=<hex HMAC-SHA256 of the raw body with it>`.';
const WebhookWithSecretSchema = WebhookSchema.extend({ secret: z.string().meta({ description: SECRET_DOC }) });

const attemptFields = {
  delivery_id: z.uuid().meta({ description: 'The `X-Svc-Delivery` header: the same for every attempt of one event to this webhook.' }),
  event: z.string(),
  event_id: z.uuid(),
  attempt: z.number().int().meta({ description: '1 to 5.' }),
  attempted_at: z.iso.datetime(),
  status_code: z
    .number()
    .int()
    .nullable()
    .meta({ description: "The receiver's HTTP status; null when none came (refused by the guard, timed out, unreachable)." }),
  latency_ms: z.number().int(),
  success: z.boolean().meta({ description: 'Only a 2xx is a success; a redirect is not followed and is a failure.' }),
  error: z.string().nullable().meta({
    description:
      'Why the attempt failed; null on success. For a receiver admitted only by WEBHOOK_ALLOWLIST (internal) it names no redirect target and a connection error by its code only.',
  }),
  response_excerpt: z
    .string()
    .nullable()
    .meta({
      description:
        'The first 1024 characters of the response body (at most 64 KiB are read). Always null for a receiver admitted only by WEBHOOK_ALLOWLIST ' +
        '(a host or address that is internal): what an internal service answers is not shown to tenants; its status and latency are.',
    }),
};
const DeliverySchema = z
  .object({ id: z.string().meta({ description: 'Position in the log (newer attempts have larger ids).' }), ...attemptFields })
  .meta({ id: 'WebhookDelivery' });
const TestDeliverySchema = z.object(attemptFields).meta({ id: 'WebhookTestDelivery' });

/** The page meta of the notifications, with the unread count (a badge's). */
const NotificationPageMetaSchema = PageMetaSchema.extend({
  unread: z.number().int().min(0).meta({ description: "The caller's unread notifications, whatever the filter." }),
}).meta({ id: 'NotificationPageMeta' });

const NotificationSchema = z
  .object({
    id: z.uuid(),
    kind: z.string().meta({ description: '`webhook.disabled`.' }),
    title: z.string(),
    body: z.string(),
    data: z.record(z.string(), z.unknown()),
    created_at: z.iso.datetime(),
    read_at: z.iso.datetime().nullable(),
    emailed_at: z.iso.datetime().nullable().meta({ description: 'When it was also e-mailed (only with SMTP_URL configured).' }),
  })
  .meta({ id: 'Notification' });

const idParams = z.object({ id: z.uuid() });
const auth = { kind: 'scope', scope: 'subdomain:write' } as const;

/** Webhook endpoints (subdomain:write) and the owner's notifications. */
export function webhooksRoutes(service: WebhooksService): RouteDef[] {
  return [
    defineRoute({
      operationId: 'listWebhooks',
      method: 'GET',
      path: '/api/v1/webhooks',
      summary: "List the caller's webhooks and those on subdomains of teams the caller is an admin or owner of (never their secrets)",
      tags,
      auth,
      bucket: 'api',
      description: PAGINATION_NOTE,
      query: z.object({ ...pagingQuery, cursor: cursorParam(TIME_CURSOR) }),
      response: z.object({ webhooks: z.array(WebhookSchema) }),
      meta: PageMetaSchema,
      handler: async ({ principal, query, respond }) => {
        const page = pageByTime(await service.list(principal!), pagingOf(query));
        respond.meta(page.meta);
        return { webhooks: page.items };
      },
    }),
    defineRoute({
      operationId: 'createWebhook',
      method: 'POST',
      path: '/api/v1/webhooks',
      summary: 'Create a webhook (201); its secret is in data.secret, shown this once',
      description:
        `At most ${MAX_WEBHOOKS_PER_ACCOUNT} webhooks per account. Deliveries: POST of the standard envelope plus \`event\` and \`delivered_at\` ` +
        '(ISO 8601, inside the signed body: refuse deliveries older than 5 minutes to stop replays), with headers `X-Svc-Signature`, `X-Svc-Event`, ' +
        '`X-Svc-Delivery` (an idempotency key, the same across retries) and `X-Svc-Attempt`. Only a 2xx answer within WEBHOOK_TIMEOUT_MS (default 10 s) ' +
        'is a success; redirects are not followed. A failed delivery is retried 4 times after 1, 4, 16 and 64 minutes (±20 %; WEBHOOK_RETRY_BASE_MS ' +
        'scales them); after the fifth failure, or at once on 410 Gone, the webhook is disabled and you are notified.',
      tags,
      auth,
      bucket: 'api',
      body: z.strictObject({ url: urlSchema, events: eventsSchema, subdomain: subdomainSchema.optional(), description: descriptionSchema.optional() }),
      response: WebhookWithSecretSchema,
      status: 201,
      errors: ['not_found', 'not_owner'],
      links: {
        GetWebhook: { operationId: 'getWebhook', parameters: { id: '$response.body#/data/id' } },
        UpdateWebhook: { operationId: 'updateWebhook', parameters: { id: '$response.body#/data/id' } },
        DeleteWebhook: { operationId: 'deleteWebhook', parameters: { id: '$response.body#/data/id' } },
        RotateWebhookSecret: { operationId: 'rotateWebhookSecret', parameters: { id: '$response.body#/data/id' } },
        EnableWebhook: { operationId: 'enableWebhook', parameters: { id: '$response.body#/data/id' } },
        TestWebhook: { operationId: 'testWebhook', parameters: { id: '$response.body#/data/id' } },
        WebhookDeliveries: { operationId: 'listWebhookDeliveries', parameters: { id: '$response.body#/data/id' } },
      },
      handler: async ({ principal, body, request }) => service.create(principal!, body, request.ip),
    }),
    defineRoute({
      operationId: 'getWebhook',
      method: 'GET',
      path: '/api/v1/webhooks/{id}',
      summary: 'Read a webhook',
      tags,
      auth,
      bucket: 'api',
      params: idParams,
      response: WebhookSchema,
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, params }) => service.get(principal!, params.id),
    }),
    defineRoute({
      operationId: 'updateWebhook',
      method: 'PATCH',
      path: '/api/v1/webhooks/{id}',
      summary: 'Update a webhook',
      description:
        'Any of url (guarded again), events, subdomain, description, enabled. `enabled: false` pauses it (reason "disabled by its owner"); `true` is the same as POST …/enable.',
      tags,
      auth,
      bucket: 'api',
      params: idParams,
      body: z
        .strictObject({
          url: urlSchema.optional(),
          events: eventsSchema.optional(),
          subdomain: subdomainSchema.optional(),
          description: descriptionSchema.optional(),
          enabled: z.boolean().optional(),
        })
        .refine((body) => Object.keys(body).length > 0, { error: rule('at_least_one_field') })
        .meta({ minProperties: 1 }),
      response: WebhookSchema,
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, params, body, request }) => service.update(principal!, params.id, body, request.ip),
    }),
    defineRoute({
      operationId: 'deleteWebhook',
      method: 'DELETE',
      path: '/api/v1/webhooks/{id}',
      summary: 'Delete a webhook and its delivery log; deliveries in flight are dropped',
      tags,
      auth,
      bucket: 'api',
      params: idParams,
      response: WebhookSchema,
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, params, request }) => service.remove(principal!, params.id, request.ip),
    }),
    defineRoute({
      operationId: 'rotateWebhookSecret',
      method: 'POST',
      path: '/api/v1/webhooks/{id}/rotate-secret',
      summary: 'Replace the secret; the new one is in data.secret, shown this once',
      description: 'Every attempt from now on, retries of earlier events included, is signed with the new secret; the old one stops at once.',
      tags,
      auth,
      bucket: 'api',
      params: idParams,
      response: WebhookWithSecretSchema,
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, params, request }) => service.rotateSecret(principal!, params.id, request.ip),
    }),
    defineRoute({
      operationId: 'enableWebhook',
      method: 'POST',
      path: '/api/v1/webhooks/{id}/enable',
      summary: 'Enable a webhook again (after an automatic disable)',
      description: 'Events raised while it was disabled, and retries pending when it was disabled, are not sent.',
      tags,
      auth,
      bucket: 'api',
      params: idParams,
      response: WebhookSchema,
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, params, request }) => service.enable(principal!, params.id, request.ip),
    }),
    defineRoute({
      operationId: 'testWebhook',
      method: 'POST',
      path: '/api/v1/webhooks/{id}/test',
      summary: 'Send `webhook.test` now and answer with the attempt',
      description:
        'Sent whatever the subscription, enabled or not, signed like any delivery; one attempt, logged in the delivery log, never retried, and its failure ' +
        '(410 included) does not disable the webhook. For a receiver admitted only by WEBHOOK_ALLOWLIST (internal) the answer carries its status and ' +
        "latency but no `response_excerpt` (null): an internal service's answers are not for tenants to read.",
      tags,
      auth,
      bucket: 'api',
      params: idParams,
      response: TestDeliverySchema,
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, params }) => service.test(principal!, params.id),
    }),
    defineRoute({
      operationId: 'listWebhookDeliveries',
      method: 'GET',
      path: '/api/v1/webhooks/{id}/deliveries',
      summary: 'The delivery log: every attempt, newest first',
      description: `${PAGINATION_NOTE} Attempts older than the platform's retention (WEBHOOK_DELIVERY_RETENTION_DAYS, default 30 days) are deleted.`,
      tags,
      auth,
      bucket: 'api',
      params: idParams,
      query: z.object(pagingQuery),
      response: z.object({ deliveries: z.array(DeliverySchema) }),
      meta: PageMetaSchema,
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, params, query, respond }) => {
        const { deliveries, meta } = await service.deliveries(principal!, params.id, query);
        respond.meta(meta);
        return { deliveries };
      },
    }),
    defineRoute({
      operationId: 'listNotifications',
      method: 'GET',
      path: '/api/v1/notifications',
      summary: "The caller's notifications, newest first (a webhook disabled, …)",
      description: `${PAGINATION_NOTE} \`meta.unread\` counts the caller's unread notifications (whatever the filter), for a badge.`,
      tags: ['notifications'],
      auth: { kind: 'account' },
      bucket: 'api',
      query: z.object({
        ...pagingQuery,
        unread: z
          .enum(['true', 'false'])
          .transform((value) => value === 'true')
          .optional()
          .meta({ description: '`true`: only the notifications not yet marked read.' }),
      }),
      response: z.object({ notifications: z.array(NotificationSchema) }),
      meta: NotificationPageMetaSchema,
      links: {
        ReadNotification: { operationId: 'readNotification', parameters: { id: '$response.body#/data/notifications/0/id' } },
      },
      handler: async ({ principal, query, respond }) => {
        const { notifications, meta } = await service.notifications(principal!, query);
        respond.meta(meta);
        return { notifications };
      },
    }),
    defineRoute({
      operationId: 'readNotification',
      method: 'POST',
      path: '/api/v1/notifications/{id}/read',
      summary: 'Mark a notification read',
      tags: ['notifications'],
      auth: { kind: 'account' },
      bucket: 'api',
      params: idParams,
      response: NotificationSchema,
      errors: ['not_found'],
      handler: async ({ principal, params }) => service.markRead(principal!, params.id),
    }),
    defineRoute({
      operationId: 'readAllNotifications',
      method: 'POST',
      path: '/api/v1/notifications/read-all',
      summary: "Mark all the caller's unread notifications read",
      description: '`data.marked` is how many were unread. Afterwards `meta.unread` of GET /api/v1/notifications is 0 (until the next notification).',
      tags: ['notifications'],
      auth: { kind: 'account' },
      bucket: 'api',
      response: z.object({ marked: z.number().int().meta({ description: 'Notifications that were unread and are now read.' }) }),
      handler: async ({ principal }) => service.markAllRead(principal!),
    }),
  ];
}
