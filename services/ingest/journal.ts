import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { REDELIVERED_HEADER, type LogMessage } from '#shared/message-log/message-log.js';
import type { Topic } from '#shared/message-log/topics.js';

/** Shortest life of a journal file: rotate() starts a new one only once the current one is this old. */
const ROTATE_MS = 1_000;

/** Journal files written by a journal of this process now: never taken over by another one of it. */
const LIVE = new Set<string>();

/**
 * The edge's journal of one topic: every message the edge takes is appended to a file before the
 * event-loop iteration that answered it ends — the lines of an iteration's requests are written with
 * one write (fs.writeSync) in its check phase (setImmediate), so they are in the kernel before the
 * loop waits again. A process killed (kill -9, OOM) therefore loses only what it answered in the
 * iteration the kill interrupted, before that iteration's write. (A write per visit, before its
 * reply, closes even that, but costs about 3 µs of CPU a visit here, a tenth of the edge's: measured
 * in docs/operations.md, Durability.) The file is not flushed (no fsync): only a power cut can lose
 * what the durable log has not committed yet (its group commit, VISIT_LOG_COMMIT_MS, then fsync).
 *
 * Files rotate: `rotate()` starts a new one for the messages appended after it (once the current
 * one is ROTATE_MS old; until then it keeps it), and the function it returns deletes the older files
 * once the messages they hold are in the durable log. Files a
 * previous run left (killed) are read at open (`recovered`, a torn last line skipped), published
 * again by the producer with REDELIVERED_HEADER (the log may hold some of them already: the
 * enricher then leaves out what it has stored), and deleted at the first release.
 */
export interface Journal {
  /** Appends a message: written at the end of this event-loop iteration (or at the next flush or rotate). */
  append(message: LogMessage): void;
  /** Writes what was appended so far (one write). */
  flush(): void;
  /**
   * Starts a new file when the current one is ROTATE_MS old; the function returned deletes the files
   * before the new one (call it once the messages appended so far are durable elsewhere).
   */
  rotate(): () => void;
  /** What previous runs left in their files, oldest first, flagged REDELIVERED_HEADER. */
  recovered: LogMessage[];
  /** Closes the file and deletes every file of this journal (what it held is durable elsewhere or counted as dropped). */
  close(): void;
}

/**
 * Opens the journal of `topic` in `dir` (the durable log's folder), taking over the files a previous
 * run left. A write that fails (a full disk) goes to `failed`: those messages stay in the producer's
 * memory only, as without a journal; nothing is thrown at the redirect.
 */
export function openJournal(dir: string, topic: Topic, failed: (error: unknown) => void): Journal {
  mkdirSync(dir, { recursive: true });
  const prefix = `journal.${topic}.`;
  const left = readdirSync(dir)
    .filter((name) => name.startsWith(prefix) && !LIVE.has(join(dir, name)))
    .map((name) => {
      const path = join(dir, name);
      return { path, at: statSync(path).mtimeMs, seq: Number(name.split('.').at(-1)) };
    })
    // Oldest first: by time, and within one run by its file number.
    .sort((a, b) => a.at - b.at || a.seq - b.seq);
  const recovered: LogMessage[] = [];
  for (const { path } of left) {
    for (const line of readFileSync(path, 'utf8').split('\n')) {
      const tab = line.indexOf('\t');
      // A line cut by the kill (the last one, never complete) is no message: its visit was not answered.
      if (tab < 0 || !line.endsWith('}')) continue;
      recovered.push({ key: line.slice(0, tab), value: line.slice(tab + 1), headers: { [REDELIVERED_HEADER]: '1' } });
    }
  }
  let older = left.map(({ path }) => path);
  const run = randomBytes(4).toString('hex');
  let seq = 0;
  let path = '';
  let fd = -1;
  /** When the current file was opened (Date.now()). */
  let openedAt = 0;
  const next = () => {
    path = join(dir, `${prefix}${run}.${seq++}`);
    fd = openSync(path, 'a');
    openedAt = Date.now();
    LIVE.add(path);
  };
  const remove = (paths: string[]) => {
    for (const file of paths) {
      LIVE.delete(file);
      try {
        unlinkSync(file);
      } catch {
        // Already gone.
      }
    }
  };
  let pending: string[] = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (pending.length === 0) return;
    const lines = pending.join('');
    pending = [];
    try {
      writeSync(fd, lines);
    } catch (error) {
      failed(error);
    }
  };
  next();
  return {
    append(message) {
      // Keys and JSON values hold no newline or tab (JSON text escapes them): one line a message.
      pending.push(`${message.key}\t${message.value}\n`);
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    },
    flush,
    rotate() {
      flush();
      // A file younger than ROTATE_MS is kept for the next batches: creating and deleting a file for
      // every publish (20 a second a topic) cost the edge a tenth of its CPU. Its messages are
      // released with the batch that rotates it: a crash replays at most about ROTATE_MS of them.
      if (Date.now() - openedAt < ROTATE_MS) {
        const before = older;
        older = [];
        return () => remove(before);
      }
      const before = [...older, path];
      closeSync(fd);
      next();
      older = [];
      return () => remove(before);
    },
    recovered,
    close() {
      flush();
      closeSync(fd);
      remove([...older, path]);
    },
  };
}
