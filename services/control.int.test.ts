import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BackupRefusedError } from '#shared/backup/manifest.js';
import { createLogger } from '#shared/logger.js';
import { askControl, controlSocketPath, listenControl } from './control.js';

const log = createLogger({ logLevel: 'silent' });
const cleanup: (() => void)[] = [];
afterEach(() => {
  for (const clean of cleanup.splice(0)) clean();
});

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'linktrack-control-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Sends raw text to the socket and reads the one-line answer. */
const rawAsk = (dir: string, text: string) =>
  new Promise<unknown>((resolve, reject) => {
    const socket = createConnection(controlSocketPath(dir), () => socket.write(text));
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.on('end', () => resolve(JSON.parse(answer)));
    socket.on('error', reject);
  });

describe('the control socket of the one-process platform (a real unix socket)', () => {
  it('is a unix socket of mode 0600 in DATA_DIR that hands a backup request to the platform and answers its manifest', async () => {
    const dir = dataDir();
    const asked: string[] = [];
    const server = await listenControl(dir, log, async (target) => (asked.push(target), { took_ms: 1 }));
    cleanup.push(() => server.close());
    const stat = statSync(join(dir, 'control.sock'));
    expect(stat.isSocket()).toBe(true);
    expect(stat.mode & 0o777).toBe(0o600);
    expect(await askControl(dir, { command: 'backup', target: '/backups/one' })).toEqual({ ok: true, manifest: { took_ms: 1 } });
    expect(asked).toEqual(['/backups/one']);
    expect(await askControl(dir, { command: 'ping' })).toEqual({ ok: true, manifest: null });
  });

  it('refuses a relative target, an unknown command, a line that is not JSON, and a second backup while one runs', async () => {
    const dir = dataDir();
    let release: () => void = () => undefined;
    const server = await listenControl(dir, log, () => new Promise((resolve) => (release = () => resolve({}))));
    cleanup.push(() => server.close());
    expect(await rawAsk(dir, '{"command":"backup","target":"relative/dir"}\n')).toMatchObject({ ok: false, refused: true, error: /unknown command/ });
    expect(await rawAsk(dir, '{"command":"drop"}\n')).toMatchObject({ ok: false, refused: true });
    expect(await rawAsk(dir, 'not json\n')).toMatchObject({ ok: false, error: 'the request is not one JSON line' });
    const first = askControl(dir, { command: 'backup', target: '/backups/a' });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await askControl(dir, { command: 'backup', target: '/backups/b' })).toMatchObject({ ok: false, refused: true, error: /already being taken/ });
    release();
    expect(await first).toEqual({ ok: true, manifest: {} });
  });

  it('answers a refused backup with its reason, and says when it was refused rather than failed', async () => {
    const dir = dataDir();
    const server = await listenControl(dir, log, async (target) => {
      if (target === '/refused') throw new BackupRefusedError('the backup folder /refused is not empty');
      throw new Error('disk on fire');
    });
    cleanup.push(() => server.close());
    expect(await askControl(dir, { command: 'backup', target: '/refused' })).toEqual({
      ok: false,
      refused: true,
      error: 'the backup folder /refused is not empty',
    });
    expect(await askControl(dir, { command: 'backup', target: '/failed' })).toEqual({ ok: false, refused: false, error: 'disk on fire' });
  });

  it('finds no platform where there is no socket, or only the file a killed process left; a new platform takes that path over', async () => {
    const dir = dataDir();
    expect(await askControl(dir, { command: 'ping' })).toBeUndefined();
    // A killed platform's socket file: nothing listens on it.
    const stale = await listenControl(dir, log, async () => ({}));
    await new Promise<void>((resolve) => stale.close(() => resolve()));
    writeFileSync(controlSocketPath(dir), '');
    expect(await askControl(dir, { command: 'ping' })).toBeUndefined();
    const server = await listenControl(dir, log, async () => ({}));
    cleanup.push(() => server.close());
    expect(await askControl(dir, { command: 'ping' })).toEqual({ ok: true, manifest: null });
  });

  it('refuses a DATA_DIR whose socket path is longer than a unix socket takes, saying so', async () => {
    const dir = join(dataDir(), 'd'.repeat(120));
    await expect(listenControl(dir, log, async () => ({}))).rejects.toThrow(/longer than the 107 bytes a unix socket takes: give DATA_DIR a shorter path/);
  });
});
