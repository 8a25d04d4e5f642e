import { randomFillSync } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';

/** Random bytes for 1 638 ids (10 each), refilled when used up: one system call instead of one per id. */
const pool = Buffer.alloc(16 * 1024);
let used = pool.length;
/** The id being laid out, as ASCII: the time part is rewritten only when the millisecond changes. */
const text = Buffer.from('00000000-0000-7000-8000-000000000000', 'latin1');
const HEX = Buffer.from('0123456789abcdef', 'latin1');
let textMs = -1;
const MAX_MS = 2 ** 48;

/**
 * A UUIDv7 with the given time (ms), for ids taken on a hot path (a redirect's visit id). Laid out
 * here rather than by the uuid package (used for any time it does not cover): its options handling,
 * per-call random source and string building cost about 0.37 µs an id against 0.12 µs here. Bits
 * as RFC 9562 §5.7: 48 bits of Unix ms, version 7, 12 random bits, variant 10, 62 random bits.
 */
export function uuidv7At(msecs: number): string {
  if (!Number.isSafeInteger(msecs) || msecs < 0 || msecs >= MAX_MS) return uuidv7({ msecs });
  if (msecs !== textMs) {
    textMs = msecs;
    const time = msecs.toString(16).padStart(12, '0');
    text.write(time.slice(0, 8), 0, 'latin1');
    text.write(time.slice(8), 9, 'latin1');
  }
  if (used + 10 > pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  const r = used;
  used += 10;
  // rand_a: 12 bits after the version digit.
  text[15] = HEX[pool[r]! & 15]!;
  text[16] = HEX[pool[r + 1]! >> 4]!;
  text[17] = HEX[pool[r + 1]! & 15]!;
  // variant 10 and the first two bits of rand_b, then 60 more bits.
  text[19] = HEX[8 | (pool[r + 2]! & 3)]!;
  text[20] = HEX[pool[r + 2]! >> 4]!;
  text[21] = HEX[pool[r + 3]! >> 4]!;
  text[22] = HEX[pool[r + 3]! & 15]!;
  for (let i = 0; i < 6; i++) {
    const byte = pool[r + 4 + i]!;
    text[24 + 2 * i] = HEX[byte >> 4]!;
    text[25 + 2 * i] = HEX[byte & 15]!;
  }
  return text.toString('latin1', 0, 36);
}
