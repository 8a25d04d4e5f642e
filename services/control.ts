import { chmodSync, rmSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { join } from 'node:path';
import type { Logger } from '#shared/logger.js';

/**
 * The one-process platform's control socket: a unix socket in DATA_DIR, mode 0600, so only the
 * platform's OS user (and root) can use it, and no TCP port, so nothing on the network can ask. It
 * takes one JSON line (`{"command":"backup","target":"/abs/dir"}`) and answers one JSON line
 * (`{"ok":true,"manifest":…}` or `{"ok":false,"error":"…"}`): `npm run backup` asks the running
 * platform for a backup there, since PGlite and chDB are opened by one process at a time.
 */
export const CONTROL_SOCKET = 'control.sock';

/** The path of the control socket of a DATA_DIR. */
export const controlSocketPath = (dataDir: string) => join(dataDir, CONTROL_SOCKET);

/** The longest unix socket path the system takes (sun_path, 108 bytes with its terminating zero). */
const MAX_SOCKET_PATH = 107;

/** Why DATA_DIR cannot hold the control socket (its path too long), or undefined when it can. */
export function controlSocketUnfit(dataDir: string): string | undefined {
  const path = controlSocketPath(dataDir);
  return Buffer.byteLength(path) > MAX_SOCKET_PATH
    ? `the control socket's path ${path} is longer than the ${MAX_SOCKET_PATH} bytes a unix socket takes: give DATA_DIR a shorter path`
    : undefined;
}

/** A request over the control socket. */
export type ControlRequest =
  | {
      command: 'backup';
      /** Absolute path of the backup folder (empty or new). */
      target: string;
    }
  /** Whether a platform listens (npm run restore refuses a DATA_DIR one runs on). */
  | { command: 'ping' };

/** An answer over the control socket. */
export type ControlAnswer = { ok: true; manifest: unknown } | { ok: false; error: string; refused: boolean };

/** Listens on the control socket of `dataDir`; each request goes to `handle`, one at a time (a second asks while one runs is refused). */
export async function listenControl(dataDir: string, log: Logger, handle: (target: string) => Promise<unknown>): Promise<Server> {
  const unfit = controlSocketUnfit(dataDir);
  if (unfit) throw new Error(unfit);
  const path = controlSocketPath(dataDir);
  // A socket file left by a process that was killed: nothing answers on it.
  rmSync(path, { force: true });
  let busy = false;
  const server = createServer((socket) => {
    let text = '';
    socket.setEncoding('utf8');
    socket.on('error', () => undefined);
    socket.on('data', (chunk: string) => {
      text += chunk;
      if (!text.includes('\n') || text.length > 65_536) return;
      socket.pause();
      const answer = async (): Promise<ControlAnswer> => {
        let request: ControlRequest;
        try {
          request = JSON.parse(text.slice(0, text.indexOf('\n'))) as ControlRequest;
        } catch {
          return { ok: false, error: 'the request is not one JSON line', refused: true };
        }
        if (request?.command === 'ping') return { ok: true, manifest: null };
        if (request?.command !== 'backup' || typeof request.target !== 'string' || !request.target.startsWith('/'))
          return { ok: false, error: 'unknown command (expected {"command":"backup","target":"<absolute folder>"})', refused: true };
        if (busy) return { ok: false, error: 'a backup is already being taken: try again when it has finished', refused: true };
        busy = true;
        try {
          return { ok: true, manifest: await handle(request.target) };
        } catch (error) {
          const refused = error instanceof Error && error.name === 'BackupRefusedError';
          if (!refused) log.error({ err: error, target: request.target }, 'backup failed');
          return { ok: false, error: error instanceof Error ? error.message : String(error), refused };
        } finally {
          busy = false;
        }
      };
      void answer().then((reply) => socket.end(`${JSON.stringify(reply)}\n`));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => resolve());
  });
  chmodSync(path, 0o600);
  return server;
}

/**
 * Sends one request to the control socket of `dataDir`: the answer, or undefined when no platform
 * listens there (no socket, or one a killed process left).
 */
export async function askControl(dataDir: string, request: ControlRequest): Promise<ControlAnswer | undefined> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(controlSocketPath(dataDir));
    let text = '';
    let connected = false;
    socket.setEncoding('utf8');
    socket.on('connect', () => {
      connected = true;
      socket.write(`${JSON.stringify(request)}\n`);
    });
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('end', () => {
      try {
        resolve(JSON.parse(text) as ControlAnswer);
      } catch {
        reject(new Error(`the platform answered its control socket with something else than JSON: ${text.slice(0, 200)}`));
      }
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      if (!connected && (error.code === 'ENOENT' || error.code === 'ECONNREFUSED')) resolve(undefined);
      else reject(error);
    });
  });
}
