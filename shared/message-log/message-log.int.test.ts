import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import kafkajs, { CompressionTypes } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '../context.js';
import { createMetrics } from '../metrics.js';
import { closeContext, createTestContext, SERVICES_MODE, testConfig, uniqueName } from '#tests/support/context.js';
import { waitFor } from '#tests/support/wait.js';
import { createLogger } from '../logger.js';
import { PROJECT_ROOT } from '../paths.js';
import { createKafkaLog, SESSION_TIMEOUT_MS } from './kafka.js';
import { createDurableLog } from './lmdb.js';
import { TOPICS } from './topics.js';
import { LogFullError, type Consumer, type LogMessage, type StoredLogMessage, type MessageLog } from './message-log.js';

/** Kafka consumer-group joins take seconds: generous, bounded waits. */
const DEADLINE_MS = 30_000;

let context: Context;
const consumers: Consumer[] = [];

beforeAll(async () => {
  context = await createTestContext();
});

afterAll(async () => {
  await Promise.all(consumers.map((consumer) => consumer.stop().catch(() => undefined)));
  await closeContext(context);
});

/**
 * The tests of this file share the context's topics: every test publishes under keys of its own
 * (`run` prefix) and each consumer keeps only those messages.
 */
async function consume(
  groupId: string,
  run: string,
  onMine: (messages: LogMessage[]) => void | Promise<void>,
  topic: (typeof TOPICS)[keyof typeof TOPICS] = TOPICS.visitsRaw,
): Promise<Consumer> {
  const consumer = await context.messageLog.consume({
    groupId,
    topic,
    handler: async (messages) => {
      const mine = messages.filter((message) => message.key.startsWith(run));
      if (mine.length > 0) await onMine(mine);
    },
  });
  consumers.push(consumer);
  return consumer;
}

async function stop(consumer: Consumer): Promise<void> {
  consumers.splice(consumers.indexOf(consumer), 1);
  await consumer.stop();
}

const message = (key: string, n: number, headers?: Record<string, string>): LogMessage => ({
  key,
  value: JSON.stringify({ n, text: `message ${n} é ✓` }),
  ...(headers ? { headers } : {}),
});
const numbers = (messages: LogMessage[]) => messages.map((m) => (JSON.parse(m.value) as { n: number }).n);
/** Folders of the durable logs this file opens, removed at the end. */
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
const silent = createLogger({ logLevel: 'silent' });
/** A fresh folder for a durable log, removed at the end of the file. */
function freshDir(): string {
  const folder = mkdtempSync(join(tmpdir(), 'linktrack-log-test-'));
  dirs.push(folder);
  return folder;
}
/** A durable one-process log in a fresh folder (or `dir`, to open one again). */
function durableLog(metrics = createMetrics(), capacity = 100, retryDelayMs = 500, dir?: string) {
  const folder = dir ?? freshDir();
  return Object.assign(createDurableLog({ dir: folder, capacity, retryDelayMs, commitDelayMs: 1 }, silent, metrics), { dir: folder });
}
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

describe(`message log (${SERVICES_MODE ? 'kafka' : 'lmdb'})`, { timeout: 90_000 }, () => {
  it('is the implementation the mode asks for and answers ping', async () => {
    expect(context.messageLog.kind).toBe(SERVICES_MODE ? 'kafka' : 'lmdb');
    await expect(context.messageLog.ping()).resolves.toBeUndefined();
  });

  it('delivers the messages of one key in publish order with key, value and headers intact', async () => {
    const run = uniqueName('order');
    const key = `${run}-link`;
    const received: LogMessage[] = [];
    await consume(uniqueName('group'), run, (mine) => void received.push(...mine));
    await context.messageLog.publish(
      TOPICS.visitsRaw,
      range(0, 10).map((n) => message(key, n, { 'x-n': String(n), 'x-run': run })),
    );
    for (const n of range(10, 15)) await context.messageLog.publish(TOPICS.visitsRaw, [message(key, n, { 'x-n': String(n), 'x-run': run })]);
    await waitFor(() => received.length >= 15, DEADLINE_MS, { message: '15 messages' });
    expect(received).toEqual(range(0, 15).map((n) => message(key, n, { 'x-n': String(n), 'x-run': run })));
  });

  it('delivers a message published without headers with an empty or absent header set', async () => {
    const run = uniqueName('noheaders');
    const received: LogMessage[] = [];
    await consume(uniqueName('group'), run, (mine) => void received.push(...mine));
    await context.messageLog.publish(TOPICS.visitsRaw, [{ key: `${run}-k`, value: '{"plain":true}' }]);
    await waitFor(() => received.length === 1, DEADLINE_MS, { message: 'the message' });
    expect(received[0]).toMatchObject({ key: `${run}-k`, value: '{"plain":true}' });
    expect(received[0]!.headers ?? {}).toEqual({});
  });

  it('with minIntervalMs, starts no batch smaller than maxBatch sooner than that after the batch before', async () => {
    const run = uniqueName('interval');
    const key = `${run}-link`;
    const calls: { at: number; size: number }[] = [];
    const received: LogMessage[] = [];
    const maxBatch = 100_000;
    const consumer = await context.messageLog.consume({
      groupId: uniqueName('group'),
      topic: TOPICS.visitsRaw,
      maxBatch,
      minIntervalMs: 500,
      handler: async (messages) => {
        calls.push({ at: performance.now(), size: messages.length });
        received.push(...messages.filter((message) => message.key.startsWith(run)));
      },
    });
    consumers.push(consumer);
    // Five publishes over a second: without the interval, one call each.
    for (const n of range(0, 5)) {
      await context.messageLog.publish(TOPICS.visitsRaw, [message(key, n)]);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await waitFor(() => received.length >= 5, DEADLINE_MS, { message: 'the five messages' });
    expect(numbers(received)).toEqual(range(0, 5));
    const gaps = calls.slice(1).map((call, i) => call.at - calls[i]!.at);
    expect(gaps.every((gap) => gap >= 495)).toBe(true);
    await stop(consumer);
  });

  it('redelivers a batch whose handler threw, then delivers every message exactly once after success', async () => {
    const run = uniqueName('retry');
    const key = `${run}-link`;
    let failedBatch: LogMessage[] | undefined;
    const delivered: LogMessage[] = [];
    await context.messageLog.publish(
      TOPICS.visitsRaw,
      range(0, 20).map((n) => message(key, n)),
    );
    await consume(uniqueName('group'), run, (mine) => {
      if (!failedBatch) {
        failedBatch = mine;
        throw new Error('simulated failure of the first batch');
      }
      delivered.push(...mine);
    });
    await waitFor(() => delivered.length >= 20, DEADLINE_MS, { message: 'all 20 messages after the failure' });
    expect(failedBatch!.length).toBeGreaterThan(0);
    // The failed batch comes again, from its first message, and nothing is lost or doubled.
    expect(delivered.slice(0, failedBatch!.length)).toEqual(failedBatch);
    expect(numbers(delivered)).toEqual(range(0, 20));
    expect(new Set(numbers(delivered)).size).toBe(20);
  });

  it('marks a batch redelivered after a handler failure as redelivered, and the next batch, handed over for the first time, not', async () => {
    // Guards BatchControl.redelivered, on which the enricher's check for visits already stored hangs.
    const run = uniqueName('redelivered');
    const key = `${run}-link`;
    const seen: { numbers: number[]; redelivered: boolean }[] = [];
    let failed = false;
    const consumer = await context.messageLog.consume({
      groupId: uniqueName('group'),
      topic: TOPICS.visitsRaw,
      handler: async (messages, batch) => {
        const mine = messages.filter((message) => message.key.startsWith(run));
        if (mine.length === 0) return;
        seen.push({ numbers: numbers(mine), redelivered: batch.redelivered });
        if (!failed) {
          failed = true;
          throw new Error('simulated failure after the batch was handled');
        }
      },
    });
    consumers.push(consumer);
    await context.messageLog.publish(
      TOPICS.visitsRaw,
      range(0, 5).map((n) => message(key, n)),
    );
    await waitFor(() => seen.length >= 2, DEADLINE_MS, { message: 'the failed batch redelivered' });
    // The batch handed over again is flagged (its first delivery may be flagged too on Kafka: the
    // first batch after joining the group).
    expect(seen[1]).toEqual({ numbers: range(0, 5), redelivered: true });
    await context.messageLog.publish(
      TOPICS.visitsRaw,
      range(5, 8).map((n) => message(key, n)),
    );
    await waitFor(() => seen.length >= 3, DEADLINE_MS, { message: 'the next batch' });
    expect(seen[2]).toEqual({ numbers: range(5, 8), redelivered: false });
    expect(seen).toHaveLength(3);
  });

  it('gives each consumer group every message', async () => {
    const run = uniqueName('groups');
    const keys = [`${run}-a`, `${run}-b`, `${run}-c`];
    const first: LogMessage[] = [];
    const second: LogMessage[] = [];
    await consume(uniqueName('group-1'), run, (mine) => void first.push(...mine));
    await consume(uniqueName('group-2'), run, (mine) => void second.push(...mine));
    const published = range(0, 12).map((n) => message(keys[n % 3]!, n));
    await context.messageLog.publish(TOPICS.visitsRaw, published);
    await waitFor(() => first.length >= 12 && second.length >= 12, DEADLINE_MS, { message: 'all messages in both groups' });
    for (const received of [first, second]) {
      expect(numbers(received).sort((x, y) => x - y)).toEqual(range(0, 12));
      // Per key, publish order holds.
      for (const key of keys) {
        expect(numbers(received.filter((m) => m.key === key))).toEqual(numbers(published.filter((m) => m.key === key)));
      }
    }
  });

  it('resumes a consumer group after its committed messages, without replaying them', async () => {
    const run = uniqueName('resume');
    const key = `${run}-link`;
    const groupId = uniqueName('group');
    const before: LogMessage[] = [];
    const after: LogMessage[] = [];
    await context.messageLog.publish(
      TOPICS.visitsRaw,
      range(0, 5).map((n) => message(key, n)),
    );
    const consumer = await consume(groupId, run, (mine) => void before.push(...mine));
    await waitFor(() => before.length >= 5, DEADLINE_MS, { message: 'the first five messages' });
    await stop(consumer);
    await context.messageLog.publish(
      TOPICS.visitsRaw,
      range(5, 10).map((n) => message(key, n)),
    );
    await consume(groupId, run, (mine) => void after.push(...mine));
    await waitFor(() => after.length >= 5, DEADLINE_MS, { message: 'the next five messages' });
    expect(numbers(before)).toEqual(range(0, 5));
    expect(numbers(after)).toEqual(range(5, 10));
  });

  it('publishes to the dead-letter topic separately from the raw visits', async () => {
    const run = uniqueName('topics');
    const raw: LogMessage[] = [];
    const dlq: LogMessage[] = [];
    await consume(uniqueName('group-raw'), run, (mine) => void raw.push(...mine));
    await consume(uniqueName('group-dlq'), run, (mine) => void dlq.push(...mine), TOPICS.visitsDlq);
    await context.messageLog.publish(TOPICS.visitsDlq, [message(`${run}-k`, 1, { 'x-dlq-reason': 'test' })]);
    await context.messageLog.publish(TOPICS.visitsRaw, [message(`${run}-k`, 2)]);
    await waitFor(() => raw.length === 1 && dlq.length === 1, DEADLINE_MS, { message: 'one message on each topic' });
    expect(numbers(raw)).toEqual([2]);
    expect(numbers(dlq)).toEqual([1]);
    expect(dlq[0]!.headers).toEqual({ 'x-dlq-reason': 'test' });
  });
});

describe(`message log inspection: peek and take (${SERVICES_MODE ? 'kafka' : 'lmdb'})`, { timeout: 120_000 }, () => {
  /** A log with topics of its own (Kafka: a prefix of its own; embedded: a fresh folder): a peek sees only what the test published. */
  const logs: MessageLog[] = [];
  afterAll(async () => {
    await Promise.all(logs.map((log) => log.close()));
  });
  function isolatedLog(): MessageLog {
    const config = testConfig();
    const log =
      config.messageLog.kind === 'kafka'
        ? createKafkaLog({ ...config.messageLog, topicPrefix: `${uniqueName('t')}.` }, silent, createMetrics())
        : durableLog(createMetrics(), 1_000);
    logs.push(log);
    return log;
  }
  /** Publishes messages 0 … count-1 one call each, over three keys (several partitions on Kafka), record times apart: oldest first is publish order. */
  async function publishNumbered(log: MessageLog, count: number, run = uniqueName('peek')) {
    for (let n = 0; n < count; n++) {
      await log.publish(TOPICS.visitsDlq, [message(`${run}-${n % 3}`, n, { 'x-n': String(n) })]);
      await new Promise((resolve) => setTimeout(resolve, 3));
    }
  }
  const stored = (messages: StoredLogMessage[]) => messages.map(({ partition, offset }) => `${partition}-${offset}`);

  it('peeks at the messages a group has not committed, oldest first, with partition and offset, without committing them', async () => {
    const log = isolatedLog();
    await publishNumbered(log, 5);
    const page = await log.peek({ topic: TOPICS.visitsDlq, groupId: 'inspected', limit: 10 });
    expect(numbers(page.messages)).toEqual(range(0, 5));
    expect(page).toMatchObject({ more: false, pending: 5 });
    expect(page.messages[2]).toMatchObject({
      key: expect.stringMatching(/-2$/),
      headers: { 'x-n': '2' },
      partition: expect.any(Number),
      offset: expect.any(Number),
    });
    expect(new Set(stored(page.messages)).size).toBe(5);
    if (SERVICES_MODE) for (const { timestamp } of page.messages) expect(Date.parse(timestamp!)).toBeGreaterThan(Date.now() - 60_000);
    else expect(page.messages.every(({ timestamp }) => timestamp === null)).toBe(true);
    // Nothing was committed: the same messages again, and a group that consumes gets them all.
    expect(stored((await log.peek({ topic: TOPICS.visitsDlq, groupId: 'inspected', limit: 10 })).messages)).toEqual(stored(page.messages));
    const received: LogMessage[] = [];
    const consumer = await log.consume({ groupId: 'inspected', topic: TOPICS.visitsDlq, handler: async (messages) => void received.push(...messages) });
    await waitFor(() => received.length === 5, DEADLINE_MS, { message: 'the five messages consumed' });
    await consumer.stop();
    expect((await log.peek({ topic: TOPICS.visitsDlq, groupId: 'inspected', limit: 10 })).pending).toBe(0);
  });

  it('pages from the positions of the previous peek: each message once, in order, and positions past the end give an empty page', async () => {
    const log = isolatedLog();
    await publishNumbered(log, 5);
    const seen: number[] = [];
    let from: Record<number, number> | undefined;
    const mores: boolean[] = [];
    for (;;) {
      const page = await log.peek({ topic: TOPICS.visitsDlq, groupId: 'pager', limit: 2, from });
      expect(page.pending).toBe(5);
      seen.push(...numbers(page.messages));
      mores.push(page.more);
      if (!page.more) break;
      from = page.next;
    }
    expect(seen).toEqual(range(0, 5));
    expect(mores).toEqual([true, true, false]);
    const farAway = Object.fromEntries(range(0, 16).map((partition) => [partition, 1_000_000]));
    expect(await log.peek({ topic: TOPICS.visitsDlq, groupId: 'pager', limit: 2, from: farAway })).toMatchObject({ messages: [], more: false, pending: 5 });
    // A limit of 0: only the count.
    expect(await log.peek({ topic: TOPICS.visitsDlq, groupId: 'pager', limit: 0 })).toMatchObject({ messages: [], pending: 5 });
  });

  it('takes the oldest uncommitted messages, commits the group past them once the handler resolved, and takes nothing when its handler throws', async () => {
    const log = isolatedLog();
    await publishNumbered(log, 5);
    await expect(log.take({ topic: TOPICS.visitsDlq, groupId: 'taker', limit: 2 }, async () => Promise.reject(new Error('republish failed')))).rejects.toThrow(
      'republish failed',
    );
    expect((await log.peek({ topic: TOPICS.visitsDlq, groupId: 'taker', limit: 10 })).pending).toBe(5);
    const handed: number[] = [];
    const taken = await log.take({ topic: TOPICS.visitsDlq, groupId: 'taker', limit: 3 }, async (messages) => void handed.push(...numbers(messages)));
    expect(handed).toEqual([0, 1, 2]);
    expect(numbers(taken)).toEqual([0, 1, 2]);
    const after = await log.peek({ topic: TOPICS.visitsDlq, groupId: 'taker', limit: 10 });
    expect(numbers(after.messages)).toEqual([3, 4]);
    expect(after.pending).toBe(2);
    // A position before the committed one counts as it.
    const rewound = Object.fromEntries(range(0, 16).map((partition) => [partition, 0]));
    expect(numbers((await log.peek({ topic: TOPICS.visitsDlq, groupId: 'taker', limit: 10, from: rewound })).messages)).toEqual([3, 4]);
    expect(numbers(await log.take({ topic: TOPICS.visitsDlq, groupId: 'taker', limit: 10 }, async () => undefined))).toEqual([3, 4]);
    expect(await log.take({ topic: TOPICS.visitsDlq, groupId: 'taker', limit: 10 }, async () => undefined)).toEqual([]);
  });

  it('removes the messages a predicate picks, pending or passed: the other pending ones stay pending and are taken next', async () => {
    const log = isolatedLog();
    await publishNumbered(log, 5);
    await log.take({ topic: TOPICS.visitsDlq, groupId: 'replay', limit: 2 }, async () => undefined);
    const erased = new Set([1, 3]);
    const pick = (candidate: StoredLogMessage) => erased.has(numbers([candidate])[0]!);
    // The one-process log has already dropped what every group passed (1); Kafka keeps it until the removal.
    expect(await log.remove({ topic: TOPICS.visitsDlq, groupId: 'replay' }, pick)).toBe(log.kind === 'lmdb' ? 1 : 2);
    const page = await log.peek({ topic: TOPICS.visitsDlq, groupId: 'replay', limit: 10 });
    expect(numbers(page.messages)).toEqual([2, 4]);
    expect(page).toMatchObject({ pending: 2, more: false });
    expect(page.messages.find((kept) => numbers([kept])[0] === 4)!.headers).toMatchObject({ 'x-n': '4' });
    // Nothing picked: nothing rewritten.
    expect(await log.remove({ topic: TOPICS.visitsDlq, groupId: 'replay' }, pick)).toBe(0);
    await log.publish(TOPICS.visitsDlq, [message('later', 5)]);
    expect(numbers(await log.take({ topic: TOPICS.visitsDlq, groupId: 'replay', limit: 10 }, async () => undefined))).toEqual([2, 4, 5]);
    expect((await log.peek({ topic: TOPICS.visitsDlq, groupId: 'replay', limit: 10 })).pending).toBe(0);
    // What a fresh group reads of the whole topic holds none of the removed ones.
    expect(numbers((await log.peek({ topic: TOPICS.visitsDlq, groupId: 'fresh', limit: 10 })).messages)).not.toEqual(expect.arrayContaining([1]));
    expect(numbers((await log.peek({ topic: TOPICS.visitsDlq, groupId: 'fresh', limit: 10 })).messages)).not.toEqual(expect.arrayContaining([3]));
  });

  it.skipIf(!SERVICES_MODE)('Kafka: a removal waits while a member is in the group it sets, and goes on once it left', async () => {
    const log = isolatedLog();
    await publishNumbered(log, 3);
    const handed: number[] = [];
    const member = await log.consume({ groupId: 'busy', topic: TOPICS.visitsDlq, handler: async (messages) => void handed.push(...numbers(messages)) });
    await waitFor(() => handed.length === 3, DEADLINE_MS, { message: 'the member consumed' });
    let done = false;
    const removal = log.remove({ topic: TOPICS.visitsDlq, groupId: 'busy' }, (candidate) => numbers([candidate])[0] === 1).finally(() => (done = true));
    // Past the scan of the topic (a group join, about 3 s): still waiting for the member to leave.
    await new Promise((resolve) => setTimeout(resolve, 8_000));
    expect(done).toBe(false);
    await member.stop();
    expect(await removal).toBe(1);
    // The member had passed them all: none is pending, and the one picked is gone from the topic.
    expect((await log.peek({ topic: TOPICS.visitsDlq, groupId: 'busy', limit: 10 })).pending).toBe(0);
    expect(numbers((await log.peek({ topic: TOPICS.visitsDlq, groupId: 'fresh', limit: 10 })).messages)).not.toContain(1);
  });

  it('runs takes of one group in one process one after the other: no message is handed over twice', async () => {
    const log = isolatedLog();
    await publishNumbered(log, 4);
    const takes = await Promise.all(
      [1, 2].map(() => log.take({ topic: TOPICS.visitsDlq, groupId: 'racing', limit: 2 }, async (messages) => void numbers(messages))),
    );
    expect(takes.map(numbers)).toEqual([
      [0, 1],
      [2, 3],
    ]);
  });
});

describe.skipIf(!SERVICES_MODE)('Kafka message log: compression and consumer recovery', { timeout: 120_000 }, () => {
  const logs: MessageLog[] = [];
  afterAll(async () => {
    await Promise.all(logs.map((log) => log.close()));
  });
  /** A Kafka log with topics of its own (a prefix of its own), and that prefix. */
  function isolatedKafkaLog(): { log: MessageLog; topicPrefix: string } {
    const config = testConfig();
    if (config.messageLog.kind !== 'kafka') throw new Error('services mode without KAFKA_BROKERS');
    const topicPrefix = `${uniqueName('t')}.`;
    const log = createKafkaLog({ ...config.messageLog, topicPrefix }, silent, createMetrics());
    logs.push(log);
    return { log, topicPrefix };
  }

  it('consumes the partitions of a member SIGKILLed mid-batch again within 10 s, each message flagged redelivered', async () => {
    const { log, topicPrefix } = isolatedKafkaLog();
    const group = uniqueName('recovery');
    // Keys of their own spread the messages over the partitions: the killed member held them all.
    await log.publish(
      TOPICS.visitsRaw,
      range(0, 30).map((n) => message(`k${n}`, n)),
    );
    const member = spawn(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'tests/support/kafka-member-child.ts'), topicPrefix, group], {
      cwd: PROJECT_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    member.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    member.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<void>((resolve) => member.on('exit', () => resolve()));
    await waitFor(() => output.includes('batch '), DEADLINE_MS, { message: 'the member handed a batch' }).catch((error: unknown) => {
      throw new Error(`${String(error)}; its output: ${output.slice(-500)}`);
    });
    member.kill('SIGKILL');
    await exited;
    const killed = Date.now();
    const seen: number[] = [];
    const flags: boolean[] = [];
    let firstBatchAt: number | undefined;
    const consumer = await log.consume({
      groupId: group,
      topic: TOPICS.visitsRaw,
      handler: async (messages, control) => {
        firstBatchAt ??= Date.now();
        seen.push(...numbers(messages));
        flags.push(control.redelivered);
      },
    });
    consumers.push(consumer);
    // Waits past the former 30 s session timeout, so that a slow recovery fails on the figure below, not on this wait.
    await waitFor(() => seen.length >= 30, 60_000, { message: 'the group consuming again' });
    const resumedMs = firstBatchAt! - killed;
    process.stdout.write(`Kafka consumer recovery: the first batch ${resumedMs} ms after the member's SIGKILL\n`);
    expect(resumedMs).toBeLessThanOrEqual(10_000);
    expect(seen.sort((a, b) => a - b)).toEqual(range(0, 30));
    expect(flags.every(Boolean)).toBe(true);
  });

  it('hands the batches of several partitions fetched together to the handler in one call, each key in order', async () => {
    const { log } = isolatedKafkaLog();
    // Twelve keys spread the messages over the partitions; the consumer joins after they are all there.
    const sent = range(0, 60).map((n) => message(`k${n % 12}`, n));
    await log.publish(TOPICS.visitsRaw, sent);
    const calls: LogMessage[][] = [];
    consumers.push(await log.consume({ groupId: uniqueName('joined'), topic: TOPICS.visitsRaw, handler: async (messages) => void calls.push(messages) }));
    await waitFor(async () => calls.flat().length >= 60 && (await log.consumers())[0]?.lag === 0, DEADLINE_MS, { message: 'the messages committed' });
    // One fetch, one call (the former consumer called the handler once a partition).
    expect(calls.map((messages) => messages.length)).toEqual([60]);
    for (const key of range(0, 12).map((k) => `k${k}`)) {
      expect(numbers(calls[0]!.filter((m) => m.key === key))).toEqual(range(0, 60).filter((n) => n % 12 === Number(key.slice(1))));
    }
  });

  it('joins partitions into calls of at most maxBatch messages, each key in order', async () => {
    const { log } = isolatedKafkaLog();
    await log.publish(
      TOPICS.visitsRaw,
      range(0, 60).map((n) => message(`k${n % 12}`, n)),
    );
    const calls: LogMessage[][] = [];
    consumers.push(
      await log.consume({ groupId: uniqueName('joined-max'), topic: TOPICS.visitsRaw, maxBatch: 7, handler: async (messages) => void calls.push(messages) }),
    );
    await waitFor(async () => calls.flat().length >= 60 && (await log.consumers())[0]?.lag === 0, DEADLINE_MS, { message: 'the messages committed' });
    expect(Math.max(...calls.map((messages) => messages.length))).toBeLessThanOrEqual(7);
    for (const key of range(0, 12).map((k) => `k${k}`)) {
      expect(numbers(calls.flat().filter((m) => m.key === key))).toEqual(range(0, 60).filter((n) => n % 12 === Number(key.slice(1))));
    }
  });

  it('redelivers every partition of a joined call that failed, flagged redelivered, and commits them once a call succeeded', async () => {
    const { log } = isolatedKafkaLog();
    await log.publish(
      TOPICS.visitsRaw,
      range(0, 60).map((n) => message(`k${n % 12}`, n)),
    );
    const calls: { numbers: number[]; redelivered: boolean }[] = [];
    const stored: number[] = [];
    consumers.push(
      await log.consume({
        groupId: uniqueName('joined-fail'),
        topic: TOPICS.visitsRaw,
        handler: async (messages, control) => {
          calls.push({ numbers: numbers(messages), redelivered: control.redelivered });
          if (calls.length === 1) throw new Error('the first joined call fails');
          stored.push(...numbers(messages));
        },
      }),
    );
    await waitFor(async () => stored.length >= 60 && (await log.consumers())[0]?.lag === 0, DEADLINE_MS, {
      message: 'the messages committed after the failure',
    });
    expect(calls[0]!.numbers.length).toBe(60);
    // Every partition of the failed call came again, flagged, and each message was stored once.
    expect(calls.slice(1).every((call) => call.redelivered)).toBe(true);
    expect(stored.sort((a, b) => a - b)).toEqual(range(0, 60));
  });

  it('tells a handler busy with a batch that the group is rebalancing (stopping), so that a joining member does not wait for the batch', async () => {
    const { log } = isolatedKafkaLog();
    const group = uniqueName('rebalance');
    await log.publish(
      TOPICS.visitsRaw,
      range(0, 12).map((n) => message(`k${n}`, n)),
    );
    let busy = false;
    let gaveUpAt: number | undefined;
    const first = await log.consume({
      groupId: group,
      topic: TOPICS.visitsRaw,
      handler: async (_messages, control) => {
        if (gaveUpAt !== undefined) return;
        busy = true;
        // A handler waiting for room downstream, as the webhook dispatcher does, checking stopping().
        const until = Date.now() + 40_000;
        while (!control.stopping() && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 100));
        if (!control.stopping()) return;
        gaveUpAt = Date.now();
        throw new Error('the group is rebalancing: the batch is left for redelivery');
      },
    });
    consumers.push(first);
    await waitFor(() => busy, DEADLINE_MS, { message: 'the first member busy with a batch' });
    const joining = Date.now();
    const second = log.consume({ groupId: group, topic: TOPICS.visitsRaw, handler: async () => undefined });
    await waitFor(() => gaveUpAt !== undefined, 45_000, { message: 'the busy handler told to stop' });
    consumers.push(await second);
    expect(gaveUpAt! - joining).toBeLessThanOrEqual(5_000);
  });

  it('packs the messages of one key into records of KAFKA_PACK_MESSAGES, and the consumer hands each message over once, in order, headers intact', async () => {
    const config = testConfig();
    if (config.messageLog.kind !== 'kafka') throw new Error('services mode without KAFKA_BROKERS');
    const topicPrefix = `${uniqueName('t')}.`;
    const log = createKafkaLog({ ...config.messageLog, topicPrefix, packMessages: 500 }, silent, createMetrics());
    logs.push(log);
    // 1 200 of one key (3 records: 500, 500, 200), 3 lone ones (a record each), and 10 of another key
    // sent again (the forwarder's header: packed apart from the first 5 of that key, which have none).
    const hot = range(0, 1_200).map((n) => message('hot', n));
    const lone = ['x', 'y', 'z'].map((key, n) => message(key, n));
    const other = range(0, 10).map((n) => message('other', n, n >= 5 ? { 'lt-redelivered': '1' } : undefined));
    await log.publish(TOPICS.visitsRaw, [...hot.slice(0, 600), ...lone, ...other, ...hot.slice(600)]);
    const admin = new kafkajs.Kafka({ brokers: config.messageLog.brokers, logLevel: kafkajs.logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      // Retried: just after the topic was created, a broker can still answer "not the leader" for a while.
      const offsets = await waitFor(() => admin.fetchTopicOffsets(`${topicPrefix}${TOPICS.visitsRaw}`), DEADLINE_MS, { message: "the topic's offsets" });
      expect(offsets.reduce((sum, { high }) => sum + Number(high), 0)).toBe(3 + 3 + 2);
    } finally {
      await admin.disconnect();
    }
    const calls: LogMessage[][] = [];
    consumers.push(
      await log.consume({ groupId: uniqueName('packed'), topic: TOPICS.visitsRaw, maxBatch: 700, handler: async (messages) => void calls.push(messages) }),
    );
    await waitFor(async () => calls.flat().length >= 1_213 && (await log.consumers())[0]?.lag === 0, DEADLINE_MS, { message: 'the messages committed' });
    const seen = calls.flat();
    expect(seen).toHaveLength(1_213);
    // Whole records a call, at most maxBatch messages (two records of the hot key never share one).
    expect(Math.max(...calls.map((messages) => messages.length))).toBeLessThanOrEqual(700);
    expect(numbers(seen.filter((m) => m.key === 'hot'))).toEqual(range(0, 1_200));
    expect(seen.filter((m) => m.key === 'other').map((m) => [numbers([m])[0], m.headers?.['lt-redelivered'] ?? null])).toEqual(
      range(0, 10).map((n) => [n, n >= 5 ? '1' : null]),
    );
    expect(seen.find((m) => m.key === 'hot')!.value).toBe(hot[0]!.value);
    expect(seen.every((m) => !('lt-packed' in (m.headers ?? {})))).toBe(true);
  });

  it('compresses every batch with LZ4 on the way in and decompresses it on the way out, messages intact', async () => {
    // The codec kafka.ts registers, wrapped to count its calls (it still does the work).
    const registered = kafkajs.CompressionCodecs[CompressionTypes.LZ4];
    const calls = { compress: 0, decompress: 0 };
    kafkajs.CompressionCodecs[CompressionTypes.LZ4] = () => {
      const codec = registered();
      return {
        compress: (encoder: { buffer: Buffer }) => (calls.compress++, codec.compress(encoder)),
        decompress: (buffer: Buffer) => (calls.decompress++, codec.decompress(buffer)),
      };
    };
    try {
      const { log } = isolatedKafkaLog();
      const sent = range(0, 50).map((n) => message(`k${n % 5}`, n, { 'x-n': String(n) }));
      await log.publish(TOPICS.visitsRaw, sent);
      expect(calls.compress).toBeGreaterThan(0);
      const seen: LogMessage[] = [];
      const consumer = await log.consume({ groupId: uniqueName('lz4'), topic: TOPICS.visitsRaw, handler: async (messages) => void seen.push(...messages) });
      consumers.push(consumer);
      await waitFor(() => seen.length >= 50, DEADLINE_MS, { message: 'the messages read back' });
      expect(calls.decompress).toBeGreaterThan(0);
      expect(seen.sort((a, b) => numbers([a])[0]! - numbers([b])[0]!)).toEqual(sent);
    } finally {
      kafkajs.CompressionCodecs[CompressionTypes.LZ4] = registered;
    }
  });

  it('keeps its partitions through a batch handled for longer than the session timeout without heartbeats from the handler: no batch handed over twice', async () => {
    const { log } = isolatedKafkaLog();
    await log.publish(
      TOPICS.visitsRaw,
      range(0, 10).map((n) => message('k', n)),
    );
    const handed: number[] = [];
    const consumer = await log.consume({
      groupId: uniqueName('slow'),
      topic: TOPICS.visitsRaw,
      handler: async (messages) => {
        const first = handed.length === 0;
        handed.push(...numbers(messages));
        // The group drops a member silent for SESSION_TIMEOUT_MS: this one heartbeats while its handler works.
        if (first) await new Promise((resolve) => setTimeout(resolve, SESSION_TIMEOUT_MS + 3_000));
      },
    });
    consumers.push(consumer);
    await waitFor(async () => handed.length >= 10 && (await log.consumers())[0]?.lag === 0, 60_000, { message: 'the batch committed' });
    // A member dropped mid-batch could not commit: its batch would have been handed over again.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(handed).toEqual(range(0, 10));
  });
});

describe.skipIf(SERVICES_MODE)('durable one-process message log inspection', () => {
  it('keeps what a take committed across a close and reopen', async () => {
    const log = durableLog(createMetrics(), 1_000);
    await log.publish(
      TOPICS.visitsDlq,
      range(0, 4).map((n) => message('k', n)),
    );
    await log.take({ topic: TOPICS.visitsDlq, groupId: 'replay', limit: 3 }, async () => undefined);
    await log.close();
    const reopened = durableLog(createMetrics(), 1_000, 500, log.dir);
    try {
      const page = await reopened.peek({ topic: TOPICS.visitsDlq, groupId: 'replay', limit: 10 });
      expect(numbers(page.messages)).toEqual([3]);
      expect(page.messages[0]).toMatchObject({ partition: 0, offset: 3 });
    } finally {
      await reopened.close();
    }
  });

  it('keeps what a removal deleted across a close and reopen, and the passed message it kept (one segment), and never gives an offset again', async () => {
    const log = durableLog(createMetrics(), 1_000);
    await log.publish(
      TOPICS.visitsDlq,
      range(0, 4).map((n) => message('k', n)),
    );
    await log.take({ topic: TOPICS.visitsDlq, groupId: 'replay', limit: 1 }, async () => undefined);
    expect(await log.remove({ topic: TOPICS.visitsDlq, groupId: 'replay' }, (candidate) => [1, 3].includes(numbers([candidate])[0]!))).toBe(2);
    await log.close();
    const reopened = durableLog(createMetrics(), 1_000, 500, log.dir);
    try {
      expect(numbers((await reopened.peek({ topic: TOPICS.visitsDlq, groupId: 'fresh', limit: 10 })).messages)).toEqual([0, 2]);
      expect((await reopened.peek({ topic: TOPICS.visitsDlq, groupId: 'replay', limit: 10 })).messages).toMatchObject([{ offset: 2 }]);
      await reopened.publish(TOPICS.visitsDlq, [message('k', 4)]);
      const page = await reopened.peek({ topic: TOPICS.visitsDlq, groupId: 'replay', limit: 10 });
      expect(page.messages.map(({ offset }) => offset)).toEqual([2, 4]);
      expect(page.pending).toBe(2);
    } finally {
      await reopened.close();
    }
  });

  it('refuses a take of a group a consumer of this process runs (the consumer takes its messages)', async () => {
    const log = durableLog();
    const consumer = await log.consume({ groupId: 'running', topic: TOPICS.visitsDlq, handler: async () => undefined });
    try {
      await expect(log.take({ topic: TOPICS.visitsDlq, groupId: 'running', limit: 1 }, async () => undefined)).rejects.toThrow(
        /has a consumer in this process/,
      );
    } finally {
      await consumer.stop();
      await log.close();
    }
  });

  it('starts a peek at the oldest message retention kept, past a group that fell behind it', async () => {
    const log = durableLog(createMetrics(), 3);
    try {
      await log.publish(TOPICS.visitsDlq, [message('k', 1)]);
      await log.take({ topic: TOPICS.visitsDlq, groupId: 'replay', limit: 1 }, async () => undefined);
      for (let n = 2; n <= 7; n++) await log.publish(TOPICS.visitsDlq, [message('k', n)]);
      const page = await log.peek({ topic: TOPICS.visitsDlq, groupId: 'replay', limit: 10 });
      expect(numbers(page.messages)).toEqual([5, 6, 7]);
      expect(page.pending).toBe(3);
    } finally {
      await log.close();
    }
  });
});

describe('durable one-process message log capacity', () => {
  /** A consumer group that holds its first batch until released: its backlog cannot shrink. */
  async function laggingConsumer(log: ReturnType<typeof durableLog>) {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const consumer = await log.consume({ groupId: 'lagging', topic: TOPICS.visitsRaw, handler: () => held });
    return { release, stop: () => consumer.stop() };
  }

  it('refuses a publish past its capacity while a consumer lags, with LogFullError, counting visit_log_dropped_total', async () => {
    const metrics = createMetrics();
    const log = durableLog(metrics, 3);
    const lagging = await laggingConsumer(log);
    try {
      await log.publish(TOPICS.visitsRaw, [message('k', 1), message('k', 2)]);
      await log.publish(TOPICS.visitsRaw, [message('k', 3)]);
      await expect(log.publish(TOPICS.visitsRaw, [message('k', 4)])).rejects.toBeInstanceOf(LogFullError);
      await expect(log.publish(TOPICS.visitsRaw, [message('k', 5), message('k', 6)])).rejects.toThrow(/visits\.raw is full \(3 messages/);
      const dropped = await metrics.visitLogDropped.get();
      expect(dropped.values).toEqual([{ labels: { topic: TOPICS.visitsRaw, reason: 'full' }, value: 3 }]);
      expect(await metrics.registry.metrics()).toMatch(/visit_log_dropped_total\{topic="visits\.raw",reason="full"\} 3/);
      // The refused messages were not half-accepted: only the first three are published.
      expect((await metrics.visitLogPublished.get()).values).toEqual([{ labels: { topic: TOPICS.visitsRaw }, value: 3 }]);
      // Capacity is per topic.
      await expect(log.publish(TOPICS.visitsDlq, [message('k', 7)])).resolves.toBeUndefined();
    } finally {
      lagging.release();
      await lagging.stop();
      await log.close();
    }
  });

  it('lets the oldest messages of a topic nobody consumes give way, counted as retention', async () => {
    const metrics = createMetrics();
    const log = durableLog(metrics, 3);
    const received: number[] = [];
    try {
      for (let n = 1; n <= 5; n++) await log.publish(TOPICS.visitsDlq, [message('k', n)]);
      expect((await metrics.visitLogDropped.get()).values).toEqual([{ labels: { topic: TOPICS.visitsDlq, reason: 'retention' }, value: 2 }]);
      const consumer = await log.consume({ groupId: 'late', topic: TOPICS.visitsDlq, handler: async (messages) => void received.push(...numbers(messages)) });
      await waitFor(() => received.length === 3, 5_000, { message: 'the retained messages' });
      expect(received).toEqual([3, 4, 5]);
      await consumer.stop();
    } finally {
      await log.close();
    }
  });

  it('does not let a group no consumer of this process runs (a role switched off) refuse publishes: past capacity its oldest messages give way', async () => {
    const metrics = createMetrics();
    const log = durableLog(metrics, 3);
    const received: number[] = [];
    try {
      const first = await log.consume({ groupId: 'off', topic: TOPICS.events, handler: async (messages) => void received.push(...numbers(messages)) });
      await log.publish(TOPICS.events, [message('k', 1)]);
      await waitFor(() => received.length === 1, 5_000);
      await first.stop();
      for (let n = 2; n <= 6; n++) await log.publish(TOPICS.events, [message('k', n)]);
      expect((await metrics.visitLogDropped.get()).values).toEqual([{ labels: { topic: TOPICS.events, reason: 'retention' }, value: 2 }]);
      const again = await log.consume({ groupId: 'off', topic: TOPICS.events, handler: async (messages) => void received.push(...numbers(messages)) });
      await waitFor(() => received.length === 4, 5_000, { message: 'the messages kept' });
      expect(received).toEqual([1, 4, 5, 6]);
      await again.stop();
    } finally {
      await log.close();
    }
  });

  it('accepts messages again once a consumer has committed the backlog', async () => {
    const metrics = createMetrics();
    const log = durableLog(metrics, 2);
    const received: number[] = [];
    try {
      await log.publish(TOPICS.visitsRaw, [message('k', 1), message('k', 2)]);
      const consumer = await log.consume({
        groupId: 'g',
        topic: TOPICS.visitsRaw,
        handler: async (messages) => void received.push(...numbers(messages)),
      });
      await waitFor(() => received.length === 2, 5_000, { message: 'the backlog to be consumed' });
      await waitFor(async () => (await metrics.visitLogBacklog.get()).values[0]?.value === 0, 5_000, { message: 'an empty backlog' });
      await log.publish(TOPICS.visitsRaw, [message('k', 3), message('k', 4)]);
      await waitFor(() => received.length === 4, 5_000, { message: 'the new messages' });
      expect(received).toEqual([1, 2, 3, 4]);
      await consumer.stop();
    } finally {
      await log.close();
    }
  });

  it('marks the batches a stopped consumer of the group was handed and did not commit as redelivered for the next consumer of the group', async () => {
    // Guards the in-process flag across consumers: it was kept per consumer, so a consumer started
    // after one that failed and stopped took the uncommitted batch for a first delivery.
    const log = durableLog(createMetrics(), 100, 20);
    const calls: { numbers: number[]; redelivered: boolean }[] = [];
    try {
      await log.publish(TOPICS.visitsRaw, [message('k', 1), message('k', 2)]);
      const first = await log.consume({
        groupId: 'g',
        topic: TOPICS.visitsRaw,
        handler: async (messages, batch) => {
          calls.push({ numbers: numbers(messages), redelivered: batch.redelivered });
          throw new Error('simulated failure after the insert');
        },
      });
      await waitFor(() => calls.length >= 1, 5_000, { message: 'the first delivery' });
      await first.stop();
      const handedBefore = calls.length;
      await log.publish(TOPICS.visitsRaw, [message('k', 3)]);
      const second = await log.consume({
        groupId: 'g',
        topic: TOPICS.visitsRaw,
        maxBatch: 1,
        handler: async (messages, batch) => void calls.push({ numbers: numbers(messages), redelivered: batch.redelivered }),
      });
      await waitFor(() => calls.length >= handedBefore + 3, 5_000, { message: 'the three messages' });
      expect(calls[0]).toEqual({ numbers: [1, 2], redelivered: false });
      // Composed otherwise (one message a batch): the two handed over before are flagged, the new one not.
      expect(calls.slice(handedBefore)).toEqual([
        { numbers: [1], redelivered: true },
        { numbers: [2], redelivered: true },
        { numbers: [3], redelivered: false },
      ]);
      await second.stop();
    } finally {
      await log.close();
    }
  });

  it('redelivers a failed batch in process after its retry pause', async () => {
    const log = durableLog(createMetrics(), 100, 20);
    const calls: number[][] = [];
    try {
      await log.publish(TOPICS.visitsRaw, [message('k', 1), message('k', 2), message('k', 3)]);
      const consumer = await log.consume({
        groupId: 'g',
        topic: TOPICS.visitsRaw,
        maxBatch: 2,
        handler: async (messages) => {
          calls.push(numbers(messages));
          if (calls.length === 1) throw new Error('simulated failure');
        },
      });
      await waitFor(() => calls.length === 3, 5_000, { message: 'three handler calls' });
      expect(calls).toEqual([[1, 2], [1, 2], [3]]);
      await consumer.stop();
    } finally {
      await log.close();
    }
  });
});

describe('durable one-process message log batching by size or time', () => {
  const message = (n: number): LogMessage => ({ key: 'k', value: String(n) });

  it('holds a partial batch up to maxWaitMs, then delivers what it has', async () => {
    const log = durableLog();
    const batches: { size: number; at: number }[] = [];
    const consumer = await log.consume({
      groupId: 'g',
      topic: TOPICS.visitsRaw,
      maxBatch: 100,
      maxWaitMs: 300,
      handler: async (messages) => void batches.push({ size: messages.length, at: Date.now() }),
    });
    try {
      const started = Date.now();
      await log.publish(TOPICS.visitsRaw, [message(1), message(2)]);
      await new Promise((resolve) => setTimeout(resolve, 100));
      await log.publish(TOPICS.visitsRaw, [message(3)]);
      await waitFor(() => batches.length === 1, 2_000);
      expect(batches[0]!.size).toBe(3);
      expect(batches[0]!.at - started).toBeGreaterThanOrEqual(290);
    } finally {
      await consumer.stop();
      await log.close();
    }
  });

  it('with minIntervalMs, starts a partial batch no sooner than that after the batch before, and a full one at once', async () => {
    const log = durableLog();
    const batches: { size: number; at: number }[] = [];
    const consumer = await log.consume({
      groupId: 'g',
      topic: TOPICS.visitsRaw,
      maxBatch: 5,
      maxWaitMs: 20,
      minIntervalMs: 1_000,
      handler: async (messages) => void batches.push({ size: messages.length, at: performance.now() }),
    });
    try {
      await log.publish(TOPICS.visitsRaw, [message(1)]);
      await waitFor(() => batches.length === 1, 2_000);
      // Ready 20 ms later but held to the interval; the two published meanwhile join it.
      for (const n of [2, 3]) {
        await log.publish(TOPICS.visitsRaw, [message(n)]);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await waitFor(() => batches.length === 2, 2_000);
      await log.publish(
        TOPICS.visitsRaw,
        range(4, 9).map((n) => message(n)),
      );
      await waitFor(() => batches.length === 3, 2_000);
      expect(batches.map((batch) => batch.size)).toEqual([1, 2, 5]);
      expect(batches[1]!.at - batches[0]!.at).toBeGreaterThanOrEqual(995);
      // Held, it would have waited a full second.
      expect(batches[2]!.at - batches[1]!.at).toBeLessThan(700);
    } finally {
      await consumer.stop();
      await log.close();
    }
  });

  it('delivers at once when maxBatch messages are there', async () => {
    const log = durableLog();
    const batches: number[] = [];
    const consumer = await log.consume({
      groupId: 'g',
      topic: TOPICS.visitsRaw,
      maxBatch: 5,
      maxWaitMs: 10_000,
      handler: async (messages) => void batches.push(messages.length),
    });
    try {
      const started = Date.now();
      await log.publish(
        TOPICS.visitsRaw,
        Array.from({ length: 12 }, (_, i) => message(i)),
      );
      await waitFor(() => batches.length === 2, 2_000);
      expect(batches).toEqual([5, 5]);
      expect(Date.now() - started).toBeLessThan(1_000);
    } finally {
      await consumer.stop();
      await log.close();
    }
  });
});

describe('durable one-process message log with concurrency', () => {
  /**
   * Six messages in a durable one-process log, handled two at a time with two batches in hand; `test`
   * runs while the consumer does, with the group's lag to read.
   */
  async function inPairs(handler: (batch: number[]) => Promise<void>, test: (lag: () => Promise<number | null>) => Promise<void>) {
    const log = durableLog(createMetrics(), 100, 10);
    try {
      await log.publish(
        TOPICS.visitsRaw,
        [1, 2, 3, 4, 5, 6].map((n) => message('k', n)),
      );
      const consumer = await log.consume({
        groupId: 'pairs',
        topic: TOPICS.visitsRaw,
        maxBatch: 2,
        concurrency: 2,
        handler: (messages) => handler(numbers(messages)),
      });
      await test(async () => (await log.consumers())[0]!.lag);
      await consumer.stop();
    } finally {
      await log.close();
    }
  }

  /** The batches handled until all is committed, when the first delivery of `failing` fails (and, until then, `slow` takes `ms`). */
  async function handledWithOneFailure(failing: string, slow: { batch: string; ms: number }): Promise<string[]> {
    const handled: string[] = [];
    let failed = false;
    await inPairs(
      async (numbersOfBatch) => {
        const batch = numbersOfBatch.join(',');
        if (batch === slow.batch && !failed) await new Promise((resolve) => setTimeout(resolve, slow.ms));
        if (batch === failing && !failed) {
          failed = true;
          handled.push(`${batch} failed`);
          throw new Error('insert refused');
        }
        handled.push(batch);
      },
      (lag) => waitFor(async () => (await lag()) === 0, 5_000, { message: 'everything committed' }).then(() => undefined),
    );
    return handled;
  }

  it('hands the next batch over while one is handled, and commits in order', async () => {
    const started: number[][] = [];
    let releaseFirst!: () => void;
    const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
    await inPairs(
      async (batch) => {
        started.push(batch);
        if (started.length === 1) await firstHeld;
      },
      async (lag) => {
        // The second batch is handed over while the first is held; the third waits for a free place.
        await waitFor(() => started.length === 2, 5_000, { message: 'the second batch handed over' });
        await new Promise((resolve) => setTimeout(resolve, 50));
        expect(started).toEqual([
          [1, 2],
          [3, 4],
        ]);
        // Nothing is committed while the oldest batch is held, though the second is done.
        expect(await lag()).toBe(6);
        releaseFirst();
        await waitFor(async () => (await lag()) === 0, 5_000, { message: 'everything committed' });
        expect(started).toEqual([
          [1, 2],
          [3, 4],
          [5, 6],
        ]);
      },
    );
  });

  it('redelivers from the failed batch, the batches after it included', async () => {
    // The first delivery of [1, 2] fails after [3, 4] was handed over (and succeeded).
    expect(await handledWithOneFailure('1,2', { batch: '1,2', ms: 20 })).toEqual(['3,4', '1,2 failed', '1,2', '3,4', '5,6']);
  });

  it('hands nothing more over once a batch in flight failed, until it is redelivered', async () => {
    // The first delivery of [3, 4] fails while [1, 2] is still being handled: [5, 6] is not handed
    // over between [1, 2] committing and [3, 4] being redelivered.
    expect(await handledWithOneFailure('3,4', { batch: '1,2', ms: 30 })).toEqual(['3,4 failed', '1,2', '3,4', '5,6']);
  });
});

describe.skipIf(SERVICES_MODE)('durable one-process message log across restarts and crashes', () => {
  /** Runs tests/support/durable-log-child.ts; `until` sees its output and says when to SIGKILL it. */
  async function child(mode: 'publish' | 'consume', dir: string, until: (output: string) => boolean): Promise<string> {
    const process_ = spawn(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'tests/support/durable-log-child.ts'), mode, dir], {
      cwd: PROJECT_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    let errors = '';
    process_.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
    const exited = new Promise<void>((resolve) => process_.on('exit', () => resolve()));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`child ${mode} did not reach its point: ${output.slice(-300)} ${errors}`)), 30_000);
      process_.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (until(output)) {
          clearTimeout(timer);
          resolve();
        }
      });
      process_.on('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`child ${mode} exited ${code}: ${errors}`));
      });
    });
    process_.kill('SIGKILL');
    await exited;
    return output;
  }

  /** Every message of visits.raw a new group reads from a log opened on `dir`. */
  async function readAll(dir: string): Promise<number[]> {
    const log = durableLog(createMetrics(), 1_000_000, 500, dir);
    const seen: number[] = [];
    const consumer = await log.consume({
      groupId: uniqueName('reader'),
      topic: TOPICS.visitsRaw,
      maxBatch: 10_000,
      handler: async (messages) => void seen.push(...messages.map((m) => Number(m.value))),
    });
    const total = (await log.consumers())[0]!.lag ?? 0;
    await waitFor(() => seen.length >= total, 10_000, { message: 'the stored messages' });
    await consumer.stop();
    await log.close();
    return seen;
  }

  it('keeps every message whose publish resolved when the process is killed with SIGKILL mid-stream', async () => {
    const dir = freshDir();
    const output = await child('publish', dir, (text) => (text.match(/published/g)?.length ?? 0) >= 300);
    const confirmed = Math.max(...[...output.matchAll(/published (\d+)/g)].map((match) => Number(match[1])));
    const stored = await readAll(dir);
    // Everything confirmed is there, in order and once; a publish under way at the kill may be too.
    expect(stored.slice(0, confirmed + 1)).toEqual(range(0, confirmed + 1));
    expect(stored.length - (confirmed + 1)).toBeLessThanOrEqual(1);
  });

  it('after a crash mid-batch, redelivers from the committed offset and flags the batches that may have been handed over before', async () => {
    const dir = freshDir();
    const log = durableLog(createMetrics(), 1_000, 500, dir);
    await log.publish(
      TOPICS.visitsRaw,
      range(0, 40).map((n) => ({ key: 'k', value: String(n) })),
    );
    await log.close();
    // Batches 0–4 and 5–9 are handled, 10–14 hangs: the crash leaves 0–4 committed at most.
    const before = await child('consume', dir, (text) => text.includes('batch 10 14'));
    expect(before).toContain('batch 0 4 false');
    const reopened = durableLog(createMetrics(), 1_000, 500, dir);
    const batches: { first: number; redelivered: boolean }[] = [];
    const consumer = await reopened.consume({
      groupId: 'crash',
      topic: TOPICS.visitsRaw,
      maxBatch: 5,
      handler: async (messages, control) => void batches.push({ first: Number(messages[0]!.value), redelivered: control.redelivered }),
    });
    await waitFor(() => batches.at(-1)?.first === 35, 10_000, { message: 'every batch' });
    await consumer.stop();
    await reopened.close();
    // Redelivered from the committed offset (0 or 5), each batch once; those handed over before the crash are flagged.
    const firsts = batches.map((batch) => batch.first);
    expect(firsts).toEqual(range(firsts[0]! / 5, 8).map((n) => n * 5));
    for (const batch of batches) if (batch.first <= 10) expect(batch.redelivered).toBe(true);
  });

  it('keeps unconsumed messages and committed offsets across a close and reopen, and reclaims what every group consumed', async () => {
    const metrics = createMetrics();
    const log = durableLog(metrics, 10_000);
    const first: number[] = [];
    const consumer = await log.consume({ groupId: 'g', topic: TOPICS.visitsRaw, handler: async (messages) => void first.push(...numbers(messages)) });
    for (let n = 0; n < 50; n++) await log.publish(TOPICS.visitsRaw, [message('k', n)]);
    await waitFor(() => first.length === 50, 5_000, { message: 'the first 50' });
    await consumer.stop();
    await log.publish(
      TOPICS.visitsRaw,
      range(50, 60).map((n) => message('k', n)),
    );
    await log.close();
    const reopened = durableLog(createMetrics(), 10_000, 500, log.dir);
    const second: number[] = [];
    const again = await reopened.consume({ groupId: 'g', topic: TOPICS.visitsRaw, handler: async (messages) => void second.push(...numbers(messages)) });
    await waitFor(() => second.length === 10, 5_000, { message: 'the 10 published after the stop' });
    expect(second).toEqual(range(50, 60));
    // Consumed segments are deleted: a new group finds nothing older than what group g still needs.
    await waitFor(async () => (await reopened.consumers())[0]!.lag === 0, 5_000);
    const late: number[] = [];
    const lateConsumer = await reopened.consume({
      groupId: 'late',
      topic: TOPICS.visitsRaw,
      handler: async (messages) => void late.push(...numbers(messages)),
    });
    await reopened.publish(TOPICS.visitsRaw, [message('k', 60)]);
    await waitFor(() => late.length > 0 && second.length === 11, 5_000);
    expect(late).toEqual([60]);
    await lateConsumer.stop();
    await again.stop();
    await reopened.close();
  });
});

/** Mounts a tmpfs of `mib` MiB on a fresh folder; undefined where mounting is not allowed (not root). */
function smallDisk(mib: number): string | undefined {
  const dir = freshDir();
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${mib}m`, 'tmpfs', dir], { stdio: 'ignore' });
    return dir;
  } catch {
    return undefined;
  }
}
const mountable = process.platform === 'linux' && process.getuid?.() === 0;

describe.skipIf(SERVICES_MODE || !mountable)('durable one-process message log on a nearly full disk (a 16 MiB tmpfs: needs root to mount)', () => {
  it('refuses publishes under DISK_MIN_FREE_MB, counted and reported by ping, without crashing, and accepts them again once there is room', async () => {
    const disk = smallDisk(16)!;
    expect(disk).toBeDefined();
    const metrics = createMetrics();
    const log = createDurableLog(
      { dir: join(disk, 'log'), commitDelayMs: 1, capacity: 1_000_000, minFreeBytes: 8 * 1_048_576, retryDelayMs: 10 },
      silent,
      metrics,
    );
    const received: number[] = [];
    try {
      const consumer = await log.consume({ groupId: 'g', topic: TOPICS.visitsRaw, handler: async (messages) => void received.push(...numbers(messages)) });
      await log.publish(TOPICS.visitsRaw, [message('k', 1)]);
      // Another program fills the disk to under the reserve.
      writeFileSync(join(disk, 'filler'), Buffer.alloc(10 * 1_048_576));
      await new Promise((resolve) => setTimeout(resolve, 150));
      await expect(log.publish(TOPICS.visitsRaw, [message('k', 2), message('k', 3)])).rejects.toThrow(/MiB free, under the 8 MiB DISK_MIN_FREE_MB keeps free/);
      await expect(log.ping()).rejects.toThrow(/cannot write/);
      expect(await metrics.registry.metrics()).toMatch(/visit_log_dropped_total\{topic="visits\.raw",reason="disk_full"\} 2/);
      // What was stored is still consumed meanwhile.
      await waitFor(() => received.length === 1, 5_000);
      rmSync(join(disk, 'filler'));
      await new Promise((resolve) => setTimeout(resolve, 150));
      await log.publish(TOPICS.visitsRaw, [message('k', 4)]);
      await expect(log.ping()).resolves.toBeUndefined();
      await waitFor(() => received.length === 2, 5_000);
      expect(received).toEqual([1, 4]);
      await consumer.stop();
    } finally {
      await log.close();
      execFileSync('umount', [disk]);
    }
  });
});
