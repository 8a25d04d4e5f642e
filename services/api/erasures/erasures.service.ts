import type { ErasureTarget } from '#shared/analytics/visits.repository.js';
import type { Context } from '#shared/context.js';
import { AppError } from '#shared/errors.js';
import { requireScope, type Principal } from '#shared/http/auth.js';
import { DLQ_REPLAY_GROUP, erasedDeadLetter } from '#shared/message-log/dead-letters.js';
import { TOPICS } from '#shared/message-log/topics.js';
import { ENRICHER_TOPIC_GROUPS, logEnds, waitCaughtUp, readUntil } from '#shared/message-log/caught-up.js';
import type { Repositories } from '#services/repositories.js';
import { linkOfCaller } from '../links/link-access.js';
import type { SubdomainsService } from '../subdomains/subdomains.service.js';

/** Longest an erasure waits for the enricher to store what was published before it began (then 503, nothing erased). */
export const ERASURE_WAIT_MS = 30_000;
/** How often the enricher's positions are read meanwhile. */
const POLL_MS = 100;

/** What an erasure answers: what it named and what it removed. */
export interface ErasureResult {
  target: ErasureTarget;
  visits_deleted: number;
  webhook_deliveries_scrubbed: number;
  dead_letters_removed: number;
}

export type ErasuresService = ReturnType<typeof erasuresService>;

/**
 * Erasure of raw visits (issue 38): a link's, a subdomain's, or one visitor's (by IP address or by a
 * visit id). The caller's own visits; staff with `admin` anyone's. The statistics keep their counts.
 */
export function erasuresService({
  repositories,
  subdomains,
  messageLog,
  log,
  waitMs = ERASURE_WAIT_MS,
}: Pick<Context, 'messageLog' | 'log'> & {
  repositories: Pick<Repositories, 'visits' | 'links' | 'webhooks' | 'audit'>;
  subdomains: Pick<SubdomainsService, 'managed' | 'access'>;
  waitMs?: number;
}) {
  const { visits, links, webhooks, audit } = repositories;

  /** The 503 of an erasure that could not run (or finish): the cause is logged, the answer names what. */
  const unavailable = (error: unknown, reason: string, details: Record<string, unknown> = {}) => {
    if (error instanceof AppError) return error;
    log.warn({ err: error, ...details }, `erasure: ${reason}`);
    return new AppError(
      'service_unavailable',
      { reason, ...details },
      { messageKey: 'error.service_unavailable.dependency', params: { names: 'visit_log' }, cause: error },
    );
  };

  /**
   * Waits until the enricher has stored every visit and beacon the message log held when the erasure
   * began (its groups' committed positions reach the ends read then), so that none of them reaches
   * the analytics store after the erasure. Bounded by `waitMs`. What an edge still holds (its buffer,
   * its spool while Kafka is away) is not in the log yet: docs/operations.md says so.
   */
  const storedSoFar = async () => {
    const deadline = Date.now() + waitMs;
    const ends = await readUntil(() => logEnds(messageLog, ENRICHER_TOPIC_GROUPS), deadline, POLL_MS);
    const left = await waitCaughtUp(messageLog, ends, deadline, POLL_MS);
    if (left.length > 0) {
      throw new AppError(
        'service_unavailable',
        {
          reason: `the enricher has not stored the visits published before the erasure within ${waitMs} ms; nothing was erased, try again`,
          behind: Object.fromEntries(left.map(({ topic, messages }) => [topic, messages])),
        },
        { messageKey: 'error.service_unavailable.dependency', params: { names: 'enricher' } },
      );
    }
  };

  return {
    /**
     * Erases the raw visits `target` names, with their beacon states, scrubs the webhook delivery-log
     * rows that hold one of their IP addresses or user agents, and removes the dead letters that hold
     * the IP address or visit id or belong to the link or subdomain. First waits (bounded) until the
     * enricher has stored what was published before: 503 `service_unavailable` and nothing erased
     * when it does not. A link or subdomain of someone else is 403 `not_owner`, an unknown one 404, as
     * elsewhere; by IP or visit id, only the caller's visits (staff: everyone's). Audited.
     */
    async erase(principal: Principal, target: ErasureTarget, request: { id: string; ip: string }): Promise<ErasureResult> {
      requireScope(principal, 'stats:read');
      let ownerId: string | undefined = principal.scopes.has('admin') ? undefined : principal.userId;
      if (target.link_id !== undefined) ownerId = (await linkOfCaller(links, subdomains, principal, target.link_id, 'admin')).owner_id;
      if (target.subdomain !== undefined) ownerId = (await subdomains.managed(principal, target.subdomain, 'admin')).owner_id;
      try {
        await storedSoFar();
      } catch (error) {
        throw unavailable(error, 'wait for the enricher to store what was published before the erasure');
      }
      const { deleted, personal } = await visits.erase(ownerId, target, `erasure:${request.id}`);
      const scrubbed = await webhooks.scrubAttempts(personal, ownerId);
      let removed: number;
      try {
        removed = await messageLog.remove({ topic: TOPICS.visitsDlq, groupId: DLQ_REPLAY_GROUP }, erasedDeadLetter(target, ownerId));
      } catch (error) {
        // The raw visits are gone already; the same erasure again removes the dead letters (it is idempotent).
        throw unavailable(error, 'remove the dead letters of the erasure', { visits_deleted: deleted, webhook_deliveries_scrubbed: scrubbed });
      }
      const result = { target, visits_deleted: deleted, webhook_deliveries_scrubbed: scrubbed, dead_letters_removed: removed };
      // The audit row names what was erased, never the IP address asked for: that would keep it.
      const named = target.ip !== undefined ? { ip: 'erased' } : target;
      await audit.insert({
        action: 'erasure',
        actorId: principal.userId,
        target: Object.entries(named).map(([key, value]) => `${key}:${value}`)[0],
        ip: request.ip,
        details: { ...result, target: named },
      });
      return { ...result, target };
    },

    /**
     * An account's deletion, before the account goes: waits for the enricher as an erasure does (503
     * and nothing erased when it does not catch up), then erases every raw visit of the account and
     * removes the dead letters that name it. Audited by the deletion itself.
     */
    async eraseAccount(ownerId: string, requestId: string): Promise<{ visits: number; dead_letters: number }> {
      try {
        await storedSoFar();
      } catch (error) {
        throw unavailable(error, "wait for the enricher to store what was published before the account's deletion");
      }
      const { deleted } = await visits.erase(ownerId, {}, `account:${ownerId}:${requestId}`);
      try {
        const removed = await messageLog.remove({ topic: TOPICS.visitsDlq, groupId: DLQ_REPLAY_GROUP }, erasedDeadLetter({}, ownerId));
        return { visits: deleted, dead_letters: removed };
      } catch (error) {
        // The account is still there: the same deletion again removes them.
        throw unavailable(error, "remove the dead letters of the account's deletion", { visits_deleted: deleted });
      }
    },
  };
}
