import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/** A mail as the test SMTP server received it, decoded: envelope recipients, subject and text body. */
export interface ReceivedMail {
  to: string[];
  subject: string;
  text: string;
  raw: string;
}

/** The bytes of quoted-printable text (`=XX` escapes, `=` soft line breaks). */
function quotedPrintable(text: string): Buffer {
  const bytes: number[] = [];
  const source = text.replace(/=\r?\n/g, '');
  for (let i = 0; i < source.length; i++) {
    const char = source[i]!;
    if (char === '=' && /^[0-9A-F]{2}$/i.test(source.slice(i + 1, i + 3))) {
      bytes.push(parseInt(source.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(...Buffer.from(char, 'utf8'));
  }
  return Buffer.from(bytes);
}

/** A header value with its RFC 2047 encoded words decoded. */
function decodeWords(value: string): string {
  return value
    .replace(/\?=\s+=\?/g, '?==?')
    .replace(/=\?([^?]+)\?([BQ])\?([^?]*)\?=/gi, (_whole, _charset: string, kind: string, data: string) =>
      kind.toUpperCase() === 'B' ? Buffer.from(data, 'base64').toString('utf8') : quotedPrintable(data.replace(/_/g, ' ')).toString('utf8'),
    );
}

/** Decodes a single-part text mail as nodemailer writes it (7bit, quoted-printable or base64). */
export function decodeMail(raw: string, to: string[]): ReceivedMail {
  const split = raw.indexOf('\r\n\r\n');
  const head = raw.slice(0, split).replace(/\r\n[ \t]+/g, ' ');
  const body = raw.slice(split + 4);
  const header = (name: string) => new RegExp(`^${name}:\\s*(.*)$`, 'im').exec(head)?.[1]?.trim() ?? '';
  const encoding = header('Content-Transfer-Encoding').toLowerCase();
  const text =
    encoding === 'quoted-printable'
      ? quotedPrintable(body).toString('utf8')
      : encoding === 'base64'
        ? Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8')
        : body;
  return { to, subject: decodeWords(header('Subject')), text: text.replace(/\r\n/g, '\n'), raw };
}

/** A local SMTP server (the smtp-server package) that keeps every mail it receives, decoded. */
export async function startSmtpServer(): Promise<{ url: string; mails: ReceivedMail[]; close(): void }> {
  const mails: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onData(stream, session, callback) {
      let raw = '';
      stream.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
      stream.on('end', () => {
        mails.push(
          decodeMail(
            raw,
            session.envelope.rcptTo.map((rcpt) => rcpt.address),
          ),
        );
        callback();
      });
    },
  });
  server.listen(0, '127.0.0.1');
  await once(server.server, 'listening');
  const port = (server.server.address() as AddressInfo).port;
  return { url: `smtp://127.0.0.1:${port}`, mails, close: () => server.close() };
}
