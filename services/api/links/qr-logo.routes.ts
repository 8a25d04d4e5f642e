import { z } from 'zod';
import type { AuditEntry } from '#shared/audit/audit.repository.js';
import { AppError } from '#shared/errors.js';
import { defineRoute, type RouteDef } from '#shared/http/route.js';
import { rule } from '#shared/i18n/index.js';
import { SUBDOMAIN_NAME_ANY_CASE } from '#shared/links/hosts.js';
import type { Repositories } from '#services/repositories.js';
import type { SubdomainsService } from '../subdomains/subdomains.service.js';
import type { QrRenderer } from './qr.js';
import { LOGO_MAX_BYTES, LOGO_MAX_INPUT_PX, LOGO_MAX_PX, LOGO_MIN_INPUT_PX, type LogoProblem } from './qr-logo.js';

const tags = ['links'];
/** The longest data URL: a LOGO_MAX_BYTES file in base64 (a third larger) after its `data:image/jpeg;base64,`. */
const DATA_URL_MAX = Math.ceil(LOGO_MAX_BYTES / 3) * 4 + 64;
/** The JSON body of an upload: the data URL and room for the rest, so that a longer string is a 422 on `image`, not a 413. */
export const QR_LOGO_BODY_LIMIT = DATA_URL_MAX + 4_096;
const DATA_URL = /^data:image\/(png|jpeg);base64,([A-Za-z0-9+/]+={0,2})$/;
const PROBLEM_RULE = { not_an_image: 'qr_logo_image', too_large: 'qr_logo_too_large', too_small: 'qr_logo_too_small' } as const satisfies Record<
  LogoProblem,
  string
>;

const nameParams = z.object({ name: z.string().regex(SUBDOMAIN_NAME_ANY_CASE, rule('dns_label')).meta({ example: 'alice' }) });
const LogoSchema = z
  .object({
    subdomain: z.string(),
    width: z
      .number()
      .int()
      .meta({ description: `Pixels of the stored logo (at most ${LOGO_MAX_PX}).` }),
    height: z.number().int(),
    digest: z.string().meta({ description: 'Names this version of the logo (QR images drawn with an older one are never answered for it).' }),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'QrLogo' });

/** A subdomain's QR-code logo: set (PUT, a data URL), read (GET, the PNG), remove (DELETE). */
export function qrLogoRoutes({
  subdomains,
  repositories,
  qr,
  audit,
}: {
  subdomains: SubdomainsService;
  repositories: Pick<Repositories, 'subdomains'>;
  qr: QrRenderer;
  audit: (entry: AuditEntry) => void;
}): RouteDef[] {
  const store = repositories.subdomains;
  return [
    defineRoute({
      operationId: 'setQrLogo',
      method: 'PUT',
      path: '/api/v1/subdomains/{name}/qr-logo',
      summary: "Set the subdomain's QR-code logo (drawn in the centre of its links' codes with `logo=true`)",
      description:
        '`image` is a data URL of a PNG or JPEG (`data:image/png;base64,…`): at most 256 KiB, 16 to 2048 pixels a side (the ' +
        `file's own bytes decide its type; SVG is refused, as it can carry script). It is checked and normalised off the event loop ` +
        `(scaled to fit ${LOGO_MAX_PX} × ${LOGO_MAX_PX}, transparency kept) and stored as a PNG, replacing any earlier one. A file that ` +
        'is no readable image, too small or too large answers 422 on `image`; an image of more than 256 KiB 413 `payload_too_large`. ' +
        "The subdomain's owner, or an admin or owner of its team. Audited (`subdomain.qr_logo_set`).",
      tags,
      auth: { kind: 'scope', scope: 'subdomain:write' },
      bucket: 'api',
      bodyLimit: QR_LOGO_BODY_LIMIT,
      params: nameParams,
      body: z.strictObject({
        image: z
          .string()
          .max(DATA_URL_MAX)
          .regex(DATA_URL, rule('qr_logo_data_url'))
          .meta({ description: 'The image as a data URL, base64.', example: 'data:image/png;base64,iVBORw0KGgo…' }),
      }),
      response: LogoSchema,
      errors: ['not_found', 'not_owner', 'payload_too_large'],
      handler: async ({ principal, params, body, request }) => {
        const row = await subdomains.managed(principal!, params.name.toLowerCase(), 'admin');
        const bytes = Buffer.from(DATA_URL.exec(body.image)![2]!, 'base64');
        if (bytes.length > LOGO_MAX_BYTES) throw new AppError('payload_too_large', { image: `at most ${LOGO_MAX_BYTES} bytes` });
        const logo = await qr.normalizeLogo(bytes);
        if (!logo.ok) throw new AppError('validation_error', { image: rule(PROBLEM_RULE[logo.problem]) });
        const stored = { png: logo.png, width: logo.width, height: logo.height, digest: logo.digest };
        const updatedAt = await store.setQrLogo(row.name, stored, principal!.userId);
        audit({
          action: 'subdomain.qr_logo_set',
          actorId: principal!.userId,
          target: row.name,
          ip: request.ip,
          details: { width: logo.width, height: logo.height },
        });
        return { subdomain: row.name, width: logo.width, height: logo.height, digest: logo.digest, updated_at: updatedAt.toISOString() };
      },
    }),
    defineRoute({
      operationId: 'getQrLogo',
      method: 'GET',
      path: '/api/v1/subdomains/{name}/qr-logo',
      summary: "The subdomain's QR-code logo, as the stored PNG",
      description: `Any member of the subdomain's team may read it. None set: 404 \`not_found\`. Uploaded images of ${LOGO_MIN_INPUT_PX} to ${LOGO_MAX_INPUT_PX} px are stored scaled to fit ${LOGO_MAX_PX} px.`,
      tags,
      auth: { kind: 'scope', scope: 'links:read' },
      bucket: 'api',
      params: nameParams,
      query: z.object({
        v: z
          .string()
          .max(64)
          .optional()
          .meta({ description: 'Not read: a page may put the digest it shows here, so that a browser never reuses an image of an older version.' }),
      }),
      response: z.string().meta({ description: 'The PNG.' }),
      raw: { contentType: 'image/png', description: 'The logo.' },
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, params, reply }) => {
        const row = await subdomains.managed(principal!, params.name.toLowerCase(), 'viewer');
        const logo = await store.qrLogo(row.name);
        if (!logo) throw new AppError('not_found', { qr_logo: row.name });
        reply.header('Cache-Control', 'private, no-cache');
        reply.header('ETag', `"${logo.digest}"`);
        return { contentType: 'image/png', body: Buffer.from(logo.png.buffer, logo.png.byteOffset, logo.png.byteLength) };
      },
    }),
    defineRoute({
      operationId: 'deleteQrLogo',
      method: 'DELETE',
      path: '/api/v1/subdomains/{name}/qr-logo',
      summary: "Remove the subdomain's QR-code logo",
      description: 'Codes asked with `logo=true` answer 422 on `logo` afterwards. Audited (`subdomain.qr_logo_removed`). None set: 404.',
      tags,
      auth: { kind: 'scope', scope: 'subdomain:write' },
      bucket: 'api',
      params: nameParams,
      response: z.object({ subdomain: z.string(), removed: z.literal(true) }),
      errors: ['not_found', 'not_owner'],
      handler: async ({ principal, params, request }) => {
        const row = await subdomains.managed(principal!, params.name.toLowerCase(), 'admin');
        if (!(await store.deleteQrLogo(row.name))) throw new AppError('not_found', { qr_logo: row.name });
        audit({ action: 'subdomain.qr_logo_removed', actorId: principal!.userId, target: row.name, ip: request.ip, details: {} });
        return { subdomain: row.name, removed: true as const };
      },
    }),
  ];
}
