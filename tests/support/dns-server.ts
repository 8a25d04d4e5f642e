import { createSocket, type RemoteInfo } from 'node:dgram';
import dnsPacket from 'dns-packet';

/**
 * A DNS server on loopback UDP for tests: answers TXT queries from a table the test sets, NXDOMAIN
 * for names it does not hold, and counts the queries it was asked. Real DNS packets on a real
 * socket (encoded and decoded with dns-packet), so the platform's resolver (node:dns with
 * DNS_RESOLVERS pointing here) takes the same path it takes against a real server.
 */
export interface TestDnsServer {
  /** `127.0.0.1:{port}`, for DNS_RESOLVERS. */
  address: string;
  /** Sets a name's TXT values (each a string; longer than 255 bytes is sent in chunks, as real servers do). */
  setTxt(name: string, values: string[]): void;
  /** Removes a name: its queries answer NXDOMAIN. */
  remove(name: string): void;
  /** Names asked for, in order. */
  asked: string[];
  close(): Promise<void>;
}

const chunks = (value: string): Buffer[] => {
  const bytes = Buffer.from(value);
  const parts: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += 255) parts.push(bytes.subarray(at, at + 255));
  return parts.length > 0 ? parts : [Buffer.alloc(0)];
};

export async function startDnsServer(): Promise<TestDnsServer> {
  const records = new Map<string, string[]>();
  const asked: string[] = [];
  const socket = createSocket('udp4');
  socket.on('message', (message: Buffer, peer: RemoteInfo) => {
    let query: dnsPacket.Packet;
    try {
      query = dnsPacket.decode(message);
    } catch {
      return;
    }
    const question = query.questions?.[0];
    if (!question) return;
    const name = question.name.toLowerCase().replace(/\.$/, '');
    asked.push(name);
    const values = records.get(name);
    const answers: dnsPacket.Answer[] =
      values && question.type === 'TXT' ? values.map((value) => ({ type: 'TXT', name: question.name, ttl: 0, class: 'IN', data: chunks(value) })) : [];
    const response = dnsPacket.encode({
      id: query.id,
      type: 'response',
      // Authoritative answer, recursion desired and available; NXDOMAIN (rcode 3) for an unknown name.
      flags: dnsPacket.AUTHORITATIVE_ANSWER | dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE | (values ? 0 : 3),
      questions: [question],
      answers,
    });
    socket.send(response, peer.port, peer.address);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(0, '127.0.0.1', () => resolve());
  });
  return {
    address: `127.0.0.1:${socket.address().port}`,
    setTxt: (name, values) => void records.set(name.toLowerCase(), values),
    remove: (name) => void records.delete(name.toLowerCase()),
    asked,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
