import { once } from 'node:events';
import { connect, createServer, type Socket } from 'node:net';

/** A TCP relay on loopback in front of a real server, which a test can cut off and bring back. */
export interface TcpProxy {
  /** The relay's port: give it to the client instead of the server's. */
  port: number;
  /**
   * An outage as the client sees a server stop: every open connection is closed and new ones are
   * refused (nothing listens on the port any more) until `restore`. The server itself keeps
   * running, so other clients of it (other test files) are not disturbed.
   */
  cut(): Promise<void>;
  /** Listens again on the same port and relays new connections. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

/** Starts a relay from a free loopback port to `target`. */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      // A closed half ends the other (below); an error on either is the cut, nothing more.
      socket.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  const stopListening = () => new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve()));
  const dropAll = () => {
    for (const socket of sockets) socket.destroy();
  };
  return {
    port,
    async cut() {
      const closed = stopListening();
      dropAll();
      await closed;
    },
    async restore() {
      server.listen(port, '127.0.0.1');
      await once(server, 'listening');
    },
    async close() {
      const closed = stopListening();
      dropAll();
      await closed;
    },
  };
}
