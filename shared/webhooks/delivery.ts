import { v5 as uuidv5 } from 'uuid';
import type { Context } from '../context.js';
import { EVENT_TYPES } from '../events/events.js';
import { VERSION } from '../version.js';
import { GuardRefusal, checkTarget } from './guard.js';
import type { DeliveryAttempt, WebhookRow, WebhooksRepository } from './webhooks.repository.js';
import { webhookSecrets } from './secrets.js';
import { postTo, type AttemptOutcome } from './send.js';
import { signBody } from './signature.js';

/** Every event name a subscription may list: the seven platform events and `webhook.test`. */
export const WEBHOOK_EVENTS = [...EVENT_TYPES, 'webhook.test'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** Bumped on every change of any webhook: caches of webhook records (dispatcher, deliverer) drop theirs. */
export const WEBHOOKS_VERSION_KEY = 'webhooks:version';

/** Attempts of one delivery, the first included (the spec's "at most 5 attempts"). */
export const MAX_ATTEMPTS = 5;
/** Growth of the retry waits: base, 4·base, 16·base, 64·base (WEBHOOK_RETRY_BASE_MS, default 1 minute). */
export const BACKOFF_FACTOR = 4;

/** An event as a delivery carries it: what the body reports. */
export interface DeliverableEvent {
  id: string;
  type: WebhookEvent;
  occurred_at: string;
  subdomain: string | null;
  data: unknown;
}

const DELIVERY_NAMESPACE = '6f1d4a52-3f0e-4c1b-9a8e-0c2d7b5e9f31';

/** The delivery id of an event to a webhook: the same for every attempt, and for the event raised again. */
export function deliveryIdOf(webhookId: string, eventId: string): string {
  return uuidv5(`${webhookId}:${eventId}`, DELIVERY_NAMESPACE);
}

/** The JSON body of an attempt: the standard envelope plus `event` and `delivered_at` (signed with the rest). */
export function deliveryBody(event: DeliverableEvent, ids: { webhookId: string; deliveryId: string; attempt: number }, deliveredAt: Date): string {
  return JSON.stringify({
    ok: true,
    data: event.data,
    meta: {
      event_id: event.id,
      occurred_at: event.occurred_at,
      subdomain: event.subdomain,
      webhook_id: ids.webhookId,
      delivery_id: ids.deliveryId,
      attempt: ids.attempt,
      server_time_utc: deliveredAt.toISOString(),
    },
    event: event.type,
    delivered_at: deliveredAt.toISOString(),
  });
}

/**
 * Writes delivery-log rows in groups: a group collects rows for `windowMs` (or until `maxPerWrite`
 * rows) and rows arriving while a write runs go in the next one, so a worker making thousands of
 * attempts a second writes tens of statements a second (PGlite runs on the main thread: a
 * statement a row would take most of it). Each caller's promise resolves once its row is stored.
 */
function groupCommit<T>(write: (items: T[]) => Promise<void>, windowMs = 10, maxPerWrite = 1000) {
  type Group = { items: T[]; settle: { resolve: () => void; reject: (error: unknown) => void }; done: Promise<void> };
  let open: Group | undefined;
  let writing = false;
  let timer: NodeJS.Timeout | undefined;
  const drain = async () => {
    clearTimeout(timer);
    timer = undefined;
    writing = true;
    while (open) {
      const group = open;
      open = undefined;
      try {
        for (let start = 0; start < group.items.length; start += maxPerWrite) await write(group.items.slice(start, start + maxPerWrite));
        group.settle.resolve();
      } catch (error) {
        group.settle.reject(error);
      }
    }
    writing = false;
  };
  return (item: T): Promise<void> => {
    if (!open) {
      let settle!: Group['settle'];
      const done = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
      open = { items: [], settle, done };
    }
    open.items.push(item);
    const { done } = open;
    if (!writing) {
      if (open.items.length >= maxPerWrite) void drain();
      else timer ??= setTimeout(() => void drain(), windowMs);
    }
    return done;
  };
}

/**
 * What a deliverer uses: the webhooks' repository (the attempt log), the secrets' keys, the webhook
 * settings, the metrics; and `keep`, where the worker hands the log rows a write failed for (the
 * database down, a lost connection), to be written later (without it, such an attempt throws).
 */
export type DelivererDeps = { webhooks: WebhooksRepository; keep?: (rows: DeliveryAttempt[]) => Promise<void> } & Pick<
  Context,
  'secrets' | 'config' | 'metrics'
>;

/**
 * Makes delivery attempts: guard (at each attempt: the name may resolve elsewhere now), sign,
 * POST to the checked address, and log the attempt. Used by the worker for events and by the API
 * for the test button. The secret is opened for each attempt only: caches of webhook records hold
 * it sealed.
 */
export function createDeliverer(deps: DelivererDeps) {
  const { webhooks: repository, config, metrics } = deps;
  const secrets = webhookSecrets(deps.secrets);
  const { allowlist, timeoutMs } = config.webhooks;
  const record = groupCommit(async (rows: DeliveryAttempt[]) => {
    try {
      await repository.insertAttempts(rows);
    } catch (error) {
      // These attempts were made: failing them because their rows could not be written would make
      // them again, to receivers that had them (the fault suite's Postgres row sent 74 % of its
      // deliveries twice), and the rows would be no nearer the log. Kept durably instead, and
      // written by the keeper's own retries (as soon as the database is back, when it was down).
      if (!deps.keep) throw error;
      await deps.keep(rows);
      metrics.webhookAttemptsKept.inc(rows.length);
    }
  });
  const userAgent = `linktrack-webhooks/${VERSION} (+${config.publicUrl}/docs)`;

  return {
    /**
     * One attempt of an event to a webhook, logged before it resolves (or, when the write fails,
     * handed to `keep` for later); never throws for the receiver's failures. A secret this process
     * cannot open throws SecretsError before anything is sent (not an attempt: the receiver is not
     * at fault).
     */
    async attempt(
      webhook: Pick<WebhookRow, 'id' | 'url' | 'secret'>,
      event: DeliverableEvent,
      deliveryId: string,
      attempt: number,
      /** Called once the receiver's exchange is over, before the attempt is logged. */
      sent: () => void = () => undefined,
    ): Promise<DeliveryAttempt> {
      let secret: string;
      try {
        secret = secrets.open(webhook);
      } catch (error) {
        sent();
        throw error;
      }
      const attemptedAt = new Date();
      const body = deliveryBody(event, { webhookId: webhook.id, deliveryId, attempt }, attemptedAt);
      const headers = {
        'content-type': 'application/json',
        'user-agent': userAgent,
        'x-svc-event': event.type,
        'x-svc-delivery': deliveryId,
        'x-svc-attempt': String(attempt),
        'x-svc-signature': signBody(secret, body),
      };
      const started = performance.now();
      let outcome: AttemptOutcome;
      try {
        outcome = await postTo(await checkTarget(webhook.url, { allowlist }), body, headers, timeoutMs);
      } catch (error) {
        if (!(error instanceof GuardRefusal)) throw error;
        outcome = {
          statusCode: null,
          latencyMs: Math.round(performance.now() - started),
          error: `refused by the SSRF guard: URL ${error.message}`,
          excerpt: null,
        };
      } finally {
        sent();
      }
      const row: DeliveryAttempt = {
        webhook_id: webhook.id,
        delivery_id: deliveryId,
        event_id: event.id,
        event: event.type,
        attempt,
        attempted_at: attemptedAt.toISOString(),
        status_code: outcome.statusCode,
        latency_ms: outcome.latencyMs,
        success: outcome.error === null,
        error: outcome.error,
        response_excerpt: outcome.excerpt,
      };
      await record(row);
      metrics.webhookAttempts.inc({ outcome: row.success ? 'success' : outcome.statusCode === null ? 'no_response' : 'http_error' });
      return row;
    },
  };
}

export type Deliverer = ReturnType<typeof createDeliverer>;
