import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '#shared/logger.js';
import { createMetrics } from '#shared/metrics.js';
import { createDurableLog } from '#shared/message-log/lmdb.js';
import { REDELIVERED_HEADER, type StoredLogMessage } from '#shared/message-log/message-log.js';
import { TOPICS } from '#shared/message-log/topics.js';
import { PROJECT_ROOT } from '#shared/paths.js';
import { testConfig } from '#tests/support/context.js';
import { waitFor } from '#tests/support/wait.js';
import { createVisitProducer } from './visit-producer.js';

// The edge's journal (journal.ts): a process killed with SIGKILL while it takes visits loses none of
// those it took (answered), although its durable log commits only every 50 ms. The child process
// (tests/support/edge-journal-child.ts) takes visits into a durable log; the test kills it, then
// starts the producer again on the same folder, as a restarted node does, and reads the log.

const log = createLogger({ logLevel: 'silent' });
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Runs the child until it has taken at least `count` visits, then SIGKILLs it; the last visit it said it took. */
async function takeThenKill(dir: string, journal: '1' | '0', count: number): Promise<number> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'tests/support/edge-journal-child.ts'), dir, journal], {
    cwd: PROJECT_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let errors = '';
  child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the child took too few visits: ${output.slice(-200)} ${errors}`)), 60_000);
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const last = /taken (\d+)\n$/.exec(output);
      if (last && Number(last[1]) >= count) {
        clearTimeout(timer);
        // Mid-stream: the kill lands between two group commits of the log with visits taken in between.
        child.kill('SIGKILL');
        resolve();
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the child exited ${code}: ${errors}`));
    });
  });
  await exited;
  return Math.max(...[...output.matchAll(/taken (\d+)\n/g)].map((match) => Number(match[1])));
}

/** Restarts the edge's producer on the folder (it publishes what the journal holds), then reads every visit of the log. */
async function restartAndRead(dir: string, journal: '1' | '0'): Promise<StoredLogMessage[]> {
  const config = {
    ...testConfig({ VISIT_JOURNAL: journal }),
    messageLog: { kind: 'lmdb' as const, dir: join(dir, 'log'), commitDelayMs: 5, capacity: 10_000_000, minFreeBytes: 0 },
  };
  const metrics = createMetrics();
  const messageLog = createDurableLog(config.messageLog, log, metrics);
  try {
    const producer = createVisitProducer({ messageLog, config, metrics, log });
    await waitFor(() => producer.buffered() === 0, 20_000, { message: 'the journal published' });
    await producer.close(1_000);
    expect(readdirSync(join(dir, 'log')).filter((name) => name.startsWith('journal.'))).toEqual([]);
    return (await messageLog.peek({ topic: TOPICS.visitsRaw, groupId: 'reader', limit: 10_000_000 })).messages;
  } finally {
    await messageLog.close();
  }
}

describe('the edge journal', { timeout: 120_000 }, () => {
  it('a process killed with SIGKILL while taking visits loses none it took: the restarted edge publishes its journal, flagged lt-redelivered', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'linktrack-journal-'));
    dirs.push(dir);
    const last = await takeThenKill(dir, '1', 20_000);
    const messages = await restartAndRead(dir, '1');
    const seen = new Set(messages.map((message) => (JSON.parse(message.value) as { n: number }).n));
    const missing = Array.from({ length: last + 1 }, (_, n) => n).filter((n) => !seen.has(n));
    expect(missing).toEqual([]);
    // A visit is in the log unflagged at most once: a second copy (the journal replaying what the log had committed) is flagged, and the enricher leaves it out.
    const unflagged = new Map<number, number>();
    for (const message of messages) {
      if (message.headers?.[REDELIVERED_HEADER] === '1') continue;
      const n = (JSON.parse(message.value) as { n: number }).n;
      unflagged.set(n, (unflagged.get(n) ?? 0) + 1);
    }
    expect([...unflagged.values()].filter((count) => count > 1)).toEqual([]);
    expect(messages.filter((message) => message.headers?.[REDELIVERED_HEADER] === '1').length).toBeGreaterThan(0);
  });

  it('without the journal (VISIT_JOURNAL=0) the same kill loses the visits taken since the last group commit', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'linktrack-journal-'));
    dirs.push(dir);
    const last = await takeThenKill(dir, '0', 20_000);
    const messages = await restartAndRead(dir, '0');
    const seen = new Set(messages.map((message) => (JSON.parse(message.value) as { n: number }).n));
    expect(Array.from({ length: last + 1 }, (_, n) => n).filter((n) => !seen.has(n)).length).toBeGreaterThan(0);
  });
});
