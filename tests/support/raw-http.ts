import { connect } from 'node:net';

/** An HTTP answer read off a socket: the status, the headers (names in lower case) and the body as text. */
export type RawAnswer = { status: number; headers: Record<string, string>; body: string };

/**
 * Sends `bytes` to 127.0.0.1:`port` exactly as written (repeated, missing or non-ASCII headers stay so:
 * fetch and inject normalise them) and reads the answer until the server closes the connection.
 */
export function rawExchange(port: number, bytes: string | Buffer): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1' });
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', body = ''] = text.split('\r\n\r\n', 2);
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body });
    });
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer within 10 s')));
    socket.write(bytes);
  });
}
