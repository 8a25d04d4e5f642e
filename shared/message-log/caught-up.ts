import { setTimeout as sleep } from 'node:timers/promises';
import type { MessageLog } from './message-log.js';
import { ENRICHER_GROUPS, TOPICS, type Topic } from './topics.js';

/** A consumer group on its topic. */
export interface GroupOfTopic {
  topic: Topic;
  group: string;
}

/** The enricher's groups: what they commit is in the analytics store (an erasure and a backup wait for them). */
export const ENRICHER_TOPIC_GROUPS: GroupOfTopic[] = [TOPICS.visitsRaw, TOPICS.trackerRaw].map((topic) => ({ topic, group: ENRICHER_GROUPS[topic] }));

/** Where the log of each group's topic ends now, per partition: the point `behind` and `waitCaughtUp` measure against. */
export interface LogEnds extends GroupOfTopic {
  ends: Map<number, number>;
}

/** How many messages below its ends a group has not committed yet. */
export interface Behind extends GroupOfTopic {
  messages: number;
}

export async function logEnds(log: MessageLog, groups: GroupOfTopic[]): Promise<LogEnds[]> {
  return Promise.all(
    groups.map(async ({ topic, group }) => ({
      topic,
      group,
      ends: new Map((await log.positions(topic, group)).map(({ partition, end }) => [partition, end])),
    })),
  );
}

export async function behind(log: MessageLog, ends: LogEnds[]): Promise<Behind[]> {
  return Promise.all(
    ends.map(async ({ topic, group, ends: at }) => ({
      topic,
      group,
      messages: (await log.positions(topic, group)).reduce((sum, { partition, committed }) => sum + Math.max(0, (at.get(partition) ?? 0) - committed), 0),
    })),
  );
}

/**
 * A read of the log's positions, tried again every `pollMs` until `deadline` while it fails: a group's
 * committed positions cannot be read while it rebalances (Kafka answers so while a consumer joins).
 * Only an error that lasts until the deadline is thrown.
 */
export async function readUntil<T>(read: () => Promise<T>, deadline: number, pollMs = 50): Promise<T> {
  for (;;) {
    try {
      return await read();
    } catch (error) {
      if (Date.now() >= deadline) throw error;
      await sleep(Math.min(pollMs, Math.max(0, deadline - Date.now())));
    }
  }
}

/**
 * Waits until every group has committed up to `ends` (what the log held when they were read), polling
 * every `pollMs`, until `deadline` (ms since the epoch). Resolves with the groups still behind then:
 * none when they caught up.
 */
export async function waitCaughtUp(log: MessageLog, ends: LogEnds[], deadline: number, pollMs = 50): Promise<Behind[]> {
  for (;;) {
    const left = (await readUntil(() => behind(log, ends), deadline, pollMs)).filter(({ messages }) => messages > 0);
    if (left.length === 0 || Date.now() >= deadline) return left;
    await sleep(Math.min(pollMs, Math.max(0, deadline - Date.now())));
  }
}
