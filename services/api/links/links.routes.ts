import Negotiator from 'negotiator';
import { z } from 'zod';
import { dateTimeField, integerParam, textField } from '#shared/http/fields.js';
import { AppError } from '#shared/errors.js';
import { PageMetaSchema, PAGINATION_NOTE, pagingOf, pagingQuery } from '#shared/http/pagination.js';
import { defineRoute, type RouteDef } from '#shared/http/route.js';
import { assertNoBody } from '#shared/http/register.js';
import { HTTP_URL, MAX_TARGET_URL_LENGTH } from '#shared/links/urls.js';
import { LINK_ID } from '#shared/ids.js';
import { RESERVED_SLUGS } from '#shared/links/slugs.js';
import { CLICK_TREND_DAYS, type LinksService, REDIRECT_TYPES } from './links.service.js';
import { IN_FLIGHT_LIMITS, type InFlightGuard } from '#shared/http/in-flight.js';
import type { QrRenderer } from './qr.js';
import { MAX_QR_MARGIN, MAX_QR_SIZE, MIN_MODULE_PX, MIN_QR_SIZE, QR_ECC_LEVELS, QR_FORMATS } from './qr-image.js';
import { normaliseColour, QR_COLOUR, QR_DEFAULT_BG, QR_DEFAULT_FG, QR_MIN_CONTRAST, qrContrast, shownContrast } from '#shared/links/qr-colours.js';
import { rule } from '#shared/i18n/index.js';
import { FORWARD_QUERY_DOC, RulesSchema, VariantsSchema } from '#shared/links/rules.js';

const tags = ['links'];

/** A slug as sent: either case (stored in lower case). A reserved one is 409 `conflict`, as a taken one. */
const slugSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, rule('slug'))
  .transform((slug) => slug.toLowerCase())
  .meta({
    description:
      `Case-insensitive: stored and matched in lower case. Unique among the live links of the subdomain (a deleted link's slug can be reused). ` +
      `Reserved (409 \`conflict\`, as a taken slug): ${RESERVED_SLUGS.join(', ')}. Without one, a 7-character slug of [a-z0-9] is generated.`,
    example: 'spring-sale',
  });
/** The target URL rule (the pattern is the whole syntax; the platform's own hosts are refused by the service). */
const targetSchema = z
  .string()
  .max(MAX_TARGET_URL_LENGTH - 1)
  .regex(HTTP_URL, rule('http_url'))
  .meta({
    description:
      `Absolute http or https URL of at most ${MAX_TARGET_URL_LENGTH - 1} characters, stored normalised (lower-case scheme and host, default ` +
      'port dropped, a `/` path when none). The pattern is the whole rule: an ASCII host name (internationalised names, Unicode or ' +
      '`xn--`, are refused as lookalike risks) or an IPv4 address, URL-safe characters only (percent-encode the others), no ' +
      "credentials. The platform's own hosts (its base domain and subdomains, its API host, localhost, loopback) are 403 `forbidden` " +
      '(`details.reason` `target_is_platform`): a short link to a short link loops or launders a target.',
    example: 'https://example.com/landing?utm_source=newsletter',
  });
const titleSchema = textField(200);
const tagsSchema = z
  .array(
    z
      .string()
      .trim()
      .regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,31}$/, rule('tag')),
  )
  .max(20)
  .meta({ description: 'Up to 20 tags, compared in lower case (stored lower-cased, duplicates removed).' });
const expiresSchema = dateTimeField().meta({ description: 'ISO 8601. Past it the link stops redirecting (state `expired`).' });
const maxVisitsSchema = z.number().int().min(1).max(2_147_483_647).meta({ description: 'Visits after which the link stops redirecting.' });
const APPEND_VISIT_ID_DOC =
  'The redirect appends `lt_visit=<visit id>` to the target URL, so that the tracker (`/tracker.js`) on the target page attaches its ' +
  'consented signals to this visit instead of starting a visit of its own. Default false.';
const appendVisitIdSchema = z.boolean().meta({ description: APPEND_VISIT_ID_DOC });

// Issue 40, protected links: the expiry fallback.
const FALLBACK_URL_DOC =
  'Where the short URL redirects (302, no visit counted) once the link has expired or reached max_visits, instead of answering 410. ' +
  'Checked as target_url is (absolute http or https, not the platform itself). `null` or absent: the 410 stays.';
const fallbackSchema = z
  .string()
  .max(MAX_TARGET_URL_LENGTH - 1)
  .regex(HTTP_URL, rule('http_url'))
  .meta({ description: FALLBACK_URL_DOC });

// Issue 40, protected links: the password (write-only).
const HAS_PASSWORD_DOC = 'The short URL asks a password first (set with `password`, which is write-only: neither it nor its hash is ever returned).';
const passwordSchema = z
  .string()
  .min(4)
  .max(128)
  .meta({
    description:
      'Write-only. The edge answers the short URL with a password page (no visit counted) and redirects only once this password is given; ' +
      'stored as an scrypt hash (N=2^15, r=8, p=1, 16-byte salt). `null` removes it. Never returned: the link says `has_password`.',
    writeOnly: true,
  });
// Issue 40: routing fields (shared/links/rules.ts).
const forwardQuerySchema = z.boolean().meta({ description: FORWARD_QUERY_DOC });

const redirectSchema = z
  .union(REDIRECT_TYPES.map((code) => z.literal(code)))
  .meta({ description: 'HTTP status of the redirect: 301, 302 (default), 307 or 308.' });

const LinkClicksSchema = z
  .object({
    total: z.number().int().min(0).meta({ description: 'Every human visit the link has had (the rollups: retention and erasures do not lower it).' }),
    last_7_days: z.number().int().min(0).meta({ description: 'The sum of `daily`.' }),
    daily: z
      .array(z.object({ date: z.iso.date().meta({ description: 'A UTC day.' }), visits: z.number().int().min(0) }))
      .length(CLICK_TREND_DAYS)
      .meta({ description: `The last ${CLICK_TREND_DAYS} UTC days, oldest first, today (so far) last; days without visits are 0.` }),
  })
  .meta({
    id: 'LinkClicks',
    description:
      'Human visits of the link (redirects and visits the tracker started; bots and attack attempts are not clicks), from the ' +
      "statistics rollups: the same count as the link's statistics. Only with `include=clicks`. Counted as the enricher stores visits, " +
      'usually within a second or two of the redirect.',
  });

/** `include=clicks`: each owner's Link gains `clicks`. One read of the rollups per page, so it is asked for, not always paid for. */
const includeQuery = {
  include: z
    .literal('clicks')
    .optional()
    .meta({ description: "`clicks` adds each link's click counts (`clicks`: total, last 7 days, and per day). Owners only: a public list answers 422." }),
};

const LinkSchema = z
  .object({
    id: z.string().meta({ description: 'Opaque, URL-safe, not sequential.', example: 'l_3q2-Xb9PzR1c_aKm' }),
    subdomain: z.string(),
    slug: z.string(),
    short_url: z.string().meta({ example: 'https://alice.links.example.com/spring-sale' }),
    target_url: z.string(),
    title: z.string().nullable(),
    tags: z.array(z.string()),
    expires_at: z.iso.datetime().nullable(),
    max_visits: z.number().int().nullable(),
    redirect_type: z.number().int(),
    append_visit_id: z.boolean().meta({ description: APPEND_VISIT_ID_DOC }),
    rules: RulesSchema,
    variants: VariantsSchema.nullable(),
    forward_query: forwardQuerySchema,
    state: z.enum(['active', 'expired', 'limit_reached', 'deleted']).meta({
      description:
        '`limit_reached`: its visits reached max_visits and it no longer redirects (changing max_visits lifts it). `deleted` is only seen in the DELETE answer and in a client_id replay of a deleted link.',
    }),
    limit_reached_at: z.iso.datetime().nullable().meta({ description: 'When the visits reached max_visits.' }),
    client_id: z.string().nullable().meta({ description: 'The idempotency key the link was created with, if any.' }),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
    deleted_at: z.iso.datetime().nullable().meta({ description: 'Set once soft-deleted (only seen in the DELETE answer).' }),
    clicks: LinkClicksSchema.optional(),
    fallback_url: z.string().nullable().meta({ description: FALLBACK_URL_DOC }),
    has_password: z.boolean().meta({ description: HAS_PASSWORD_DOC }),
  })
  .meta({ id: 'Link' });

export const PublicLinkSchema = z
  .object({ slug: z.string(), short_url: z.string(), title: z.string().nullable(), created_at: z.iso.datetime() })
  .meta({ id: 'PublicLink', description: 'A link as the public sees it: no target, tags, limits or ids.' });

const idParams = z.object({ id: z.string().regex(LINK_ID, rule('link_id')) });

/** Link endpoints: the owner's CRUD, duplicate and QR, and the public list of a subdomain. */
export function linksRoutes(
  service: LinksService,
  {
    qr,
    inFlight,
    logoOf,
  }: {
    qr: QrRenderer;
    inFlight: InFlightGuard;
    /** A subdomain's QR-code logo (PUT /api/v1/subdomains/{name}/qr-logo), for `logo=true`. */
    logoOf: (subdomain: string) => Promise<{ png: Uint8Array; digest: string } | undefined>;
  },
): RouteDef[] {
  return [
    defineRoute({
      operationId: 'listLinks',
      method: 'GET',
      path: '/api/v1/links',
      summary: "List links: the caller's (links:read), or a subdomain's public links without credentials",
      description:
        "With credentials: the caller's live links (links:read), newest first, filtered by `subdomain`, " +
        '`q` (substring of slug, title or target, case-insensitive), `tag` and `since` (created at or after). ' +
        "Another owner's `subdomain` answers its public list, or 403 `not_owner` when its policy hides links. " +
        'Without credentials, `subdomain` is required and the answer is its public list: only when its policy has stats_show_links ' +
        '(else 403 `forbidden`), only links neither deleted, expired nor at their visit limit and older than stats_publish_delay_sec, at most its stats_max_items ' +
        'newest, as PublicLink objects; the public list takes no q, tag or since (422). ' +
        PAGINATION_NOTE,
      tags,
      auth: { kind: 'optional' },
      bucket: 'api',
      query: z.object({
        subdomain: z.string().max(63).optional(),
        q: textField(200).optional(),
        tag: textField(32).optional(),
        since: dateTimeField().optional(),
        ...includeQuery,
        ...pagingQuery,
      }),
      response: z.object({ links: z.array(z.union([LinkSchema, PublicLinkSchema])) }),
      meta: PageMetaSchema,
      errors: ['unauthorized', 'not_found', 'not_owner'],
      handler: async ({ principal, query, respond }) => {
        const { limit, cursor, page, ...filters } = query;
        const paging = pagingOf({ limit, cursor, page });
        let result;
        if (principal) result = await service.list(principal, filters, paging);
        else {
          if (filters.subdomain === undefined) throw new AppError('unauthorized', { hint: 'send credentials, or name a subdomain for its public links' });
          result = await service.publicList(filters.subdomain, filters, paging);
        }
        respond.meta(result.meta);
        return { links: result.items };
      },
    }),
    defineRoute({
      operationId: 'createLink',
      method: 'POST',
      path: '/api/v1/links',
      summary: 'Create a link (201); with a client_id already used, 200 with the original and meta.code duplicate_client_id',
      description:
        '`client_id` makes the create idempotent per owner: a replay answers 200 with the original object and `meta.code` ' +
        '`duplicate_client_id`; the same client_id with a different body answers 409 `conflict`. A slug taken by a live link of the ' +
        "subdomain answers 409 `conflict`. The subdomain must be the caller's (403 `not_owner`).",
      tags,
      auth: { kind: 'scope', scope: 'links:write' },
      bucket: 'api',
      body: z.strictObject({
        subdomain: z.string().max(63),
        target_url: targetSchema,
        slug: slugSchema.optional(),
        title: titleSchema.optional(),
        tags: tagsSchema.optional(),
        expires_at: expiresSchema.optional(),
        max_visits: maxVisitsSchema.optional(),
        redirect_type: redirectSchema.optional(),
        append_visit_id: appendVisitIdSchema.optional(),
        rules: RulesSchema.optional(),
        variants: VariantsSchema.optional(),
        forward_query: forwardQuerySchema.optional(),
        client_id: z.string().min(1).max(128).optional().meta({ description: 'Idempotency key chosen by the client, unique per owner.' }),
        fallback_url: fallbackSchema.optional(),
        password: passwordSchema.optional(),
      }),
      response: LinkSchema,
      status: 201,
      errors: ['not_found', 'not_owner', 'conflict'],
      links: {
        GetLink: { operationId: 'getLink', parameters: { id: '$response.body#/data/id' } },
        UpdateLink: { operationId: 'updateLink', parameters: { id: '$response.body#/data/id' } },
        DeleteLink: { operationId: 'deleteLink', parameters: { id: '$response.body#/data/id' } },
        DuplicateLink: { operationId: 'duplicateLink', parameters: { id: '$response.body#/data/id' } },
        LinkQr: { operationId: 'getLinkQr', parameters: { id: '$response.body#/data/id' } },
        LinkStats: { operationId: 'getStats', parameters: { scope: 'link', id: '$response.body#/data/id' } },
      },
      handler: async ({ principal, body, respond }) => {
        const { link, replay } = await service.create(principal!, body);
        if (replay) {
          respond.status(200);
          respond.meta({ code: 'duplicate_client_id' });
        }
        return link;
      },
    }),
    defineRoute({
      operationId: 'getLink',
      method: 'GET',
      path: '/api/v1/links/{id}',
      summary: 'Read a link',
      tags,
      auth: { kind: 'scope', scope: 'links:read' },
      bucket: 'api',
      params: idParams,
      query: z.object(includeQuery),
      response: LinkSchema,
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, params, query }) => service.get(principal!, params.id, { clicks: query.include === 'clicks' }),
    }),
    defineRoute({
      operationId: 'updateLink',
      method: 'PATCH',
      path: '/api/v1/links/{id}',
      summary: 'Update a link',
      description:
        'Any of slug, target_url, title, tags, expires_at, max_visits, redirect_type, append_visit_id, fallback_url, password, rules, variants, forward_query; ' +
        '`null` clears title, expires_at, max_visits, fallback_url, password and variants (`[]` clears rules).',
      tags,
      auth: { kind: 'scope', scope: 'links:write' },
      bucket: 'api',
      params: idParams,
      body: z
        .strictObject({
          slug: slugSchema.optional(),
          target_url: targetSchema.optional(),
          title: titleSchema.nullable().optional(),
          tags: tagsSchema.optional(),
          expires_at: expiresSchema.nullable().optional(),
          max_visits: maxVisitsSchema.nullable().optional(),
          redirect_type: redirectSchema.optional(),
          append_visit_id: appendVisitIdSchema.optional(),
          fallback_url: fallbackSchema.nullable().optional(),
          password: passwordSchema.nullable().optional(),
          rules: RulesSchema.optional(),
          variants: VariantsSchema.nullable().optional(),
          forward_query: forwardQuerySchema.optional(),
        })
        .refine((body) => Object.keys(body).length > 0, { error: rule('at_least_one_field') })
        .meta({ minProperties: 1 }),
      response: LinkSchema,
      errors: ['not_found', 'not_owner', 'conflict'],
      handler: async ({ principal, params, body }) => service.update(principal!, params.id, body),
    }),
    defineRoute({
      operationId: 'deleteLink',
      method: 'DELETE',
      path: '/api/v1/links/{id}',
      summary: 'Soft-delete a link: it stops redirecting, leaves lists, reads answer 404; its statistics stay',
      tags,
      auth: { kind: 'scope', scope: 'links:write' },
      bucket: 'api',
      params: idParams,
      response: LinkSchema,
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, params }) => service.remove(principal!, params.id),
    }),
    defineRoute({
      operationId: 'duplicateLink',
      method: 'POST',
      path: '/api/v1/links/{id}/duplicate',
      summary: 'Clone a link under a new generated slug (201)',
      description:
        'The copy has the same subdomain, target, title, tags, expiry, visit limit, redirect type and append_visit_id, and no client_id. ' +
        'It takes no request body: send none (or `{}`); any field is refused with 400 `bad_request` naming it, rather than ignored ' +
        '(change the copy with PATCH /api/v1/links/{id} afterwards).',
      tags,
      auth: { kind: 'scope', scope: 'links:write' },
      bucket: 'api',
      params: idParams,
      response: LinkSchema,
      status: 201,
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, params, request }) => {
        assertNoBody(request.body);
        return service.duplicate(principal!, params.id);
      },
    }),
    defineRoute({
      operationId: 'getLinkQr',
      method: 'GET',
      path: '/api/v1/links/{id}/qr',
      summary: 'QR code of the short URL, as SVG (default) or PNG',
      description:
        'PNG with `?format=png`, or without `format` when `Accept` prefers `image/png` over `image/svg+xml`; otherwise SVG. ' +
        '`size` is the image width and height in pixels, `margin` the quiet zone in modules, `ecc` the error-correction level. ' +
        `Every module is drawn as a whole number of pixels, at least ${MIN_MODULE_PX}, so every image answered scans: the symbol is ` +
        'centred and the pixels whole modules leave over widen the quiet zone. A `size` too small for the link at that margin and ' +
        `ecc (the symbol grows with the short URL's length and the ecc level) answers 422 \`validation_error\` with the least size ` +
        `in \`details.size\`. Images are ` +
        'rendered off the event loop and cached per short URL and parameters (a cached one is answered at once). An account has at ' +
        `most ${IN_FLIGHT_LIMITS.qr_png.max} PNG requests in progress at once (per API process): one more answers 429 \`rate_limited\` ` +
        '(`details.reason` `too_many_in_flight`) with `Retry-After`, before any work; so does a saturated renderer (`details.reason` ' +
        '`qr_renderer_busy`). ' +
        '`fg` and `bg` colour the modules and the background (six hex digits, `#` optional, as `%23` in a query; black on white ' +
        `by default). The modules must be the darker, with a contrast ratio (WCAG 2) of at least ${QR_MIN_CONTRAST}:1, so that ` +
        'scanners read the code: a lower contrast, or light modules on a dark background, answers 422 `validation_error` on `fg`. ' +
        "`logo=true` draws the subdomain's logo (PUT /api/v1/subdomains/{name}/qr-logo) in the centre, in a box of the background " +
        "colour a module wider than it, at most about a quarter of the symbol's width, and the code at error correction H whatever " +
        '`ecc` says (its 30 % redundancy restores the modules the box hides): a larger symbol, so a larger least `size`. A subdomain ' +
        'without a logo answers 422 on `logo`. The PNG is then truecolour.',
      tags,
      auth: { kind: 'scope', scope: 'links:read' },
      bucket: 'api',
      params: idParams,
      query: z.object({
        format: z.enum(QR_FORMATS).optional(),
        size: integerParam(MIN_QR_SIZE, MAX_QR_SIZE)
          .default(256)
          .meta({
            description: `Pixels, ${MIN_QR_SIZE} to ${MAX_QR_SIZE}; default 256. At least ${MIN_MODULE_PX} px per module (422 with the least size otherwise).`,
          }),
        margin: integerParam(0, MAX_QR_MARGIN)
          .default(4)
          .meta({ description: `Quiet zone in modules, 0 to ${MAX_QR_MARGIN}; default 4. With 0, the page around the code must be light.` }),
        ecc: z.enum(QR_ECC_LEVELS).default('M').meta({ description: 'Error correction: L 7 %, M 15 % (default), Q 25 %, H 30 %.' }),
        // ---- QR colours (issue 40, item 8) ----
        fg: z
          .string()
          .regex(QR_COLOUR, rule('qr_colour'))
          .transform(normaliseColour)
          .optional()
          .meta({ description: `Colour of the modules, e.g. \`1a5fb4\`; default \`${QR_DEFAULT_FG}\`.` }),
        bg: z
          .string()
          .regex(QR_COLOUR, rule('qr_colour'))
          .transform(normaliseColour)
          .optional()
          .meta({ description: `Colour of the background; default \`${QR_DEFAULT_BG}\`. At least ${QR_MIN_CONTRAST}:1 lighter than \`fg\`.` }),
        // ---- end QR colours ----
        logo: z
          .enum(['true', 'false'])
          .transform((value) => value === 'true')
          .optional()
          .meta({ description: "`true`: the subdomain's logo in the centre (drawn at ecc H). Default false." }),
      }),
      response: z.string().meta({ description: 'The image.' }),
      raw: { contentType: ['image/svg+xml', 'image/png'], description: 'The QR code image.' },
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, params, query, request, reply }) => {
        const colours = { fg: query.fg ?? QR_DEFAULT_FG, bg: query.bg ?? QR_DEFAULT_BG };
        const contrast = qrContrast(colours.fg, colours.bg);
        // Checked before the slot and the database read: a refusal costs nothing.
        if (contrast < QR_MIN_CONTRAST)
          throw new AppError('validation_error', { fg: rule('qr_contrast', { min: QR_MIN_CONTRAST, ratio: shownContrast(contrast) }) });
        const format =
          query.format ??
          (new Negotiator({ headers: { accept: request.headers.accept ?? '*/*' } }).mediaType(['image/svg+xml', 'image/png']) === 'image/png' ? 'png' : 'svg');
        // The slot is taken first, so that a refusal costs no database read.
        const release = format === 'png' ? inFlight.acquire('qr_png', principal!.userId) : undefined;
        try {
          const { url, slug, subdomain } = await service.shortUrlOf(principal!, params.id);
          const logo = query.logo ? await logoOf(subdomain) : undefined;
          if (query.logo && !logo) throw new AppError('validation_error', { logo: rule('qr_logo_missing') });
          const body = await qr.render({
            text: url,
            format,
            size: query.size,
            margin: query.margin,
            ecc: logo ? 'H' : query.ecc,
            ...colours,
            ...(logo ? { logo: { png: logo.png, digest: logo.digest } } : {}),
          });
          reply.header('Content-Disposition', `inline; filename="${slug}.${format}"`);
          reply.header('Vary', 'Accept');
          return { contentType: format === 'png' ? 'image/png' : 'image/svg+xml; charset=utf-8', body };
        } finally {
          release?.();
        }
      },
    }),
  ];
}
