/**
 * A TCP proxy in front of a server that can cut the line: after a given number of bytes sent
 * towards the server it destroys every connection, and either lets the next ones through
 * (a dropped connection) or refuses them until healed (the network is down). Self-contained
 * (only `node:net`), so a test can copy it next to a script that runs outside this project.
 */
import { createServer, connect, type Socket } from 'node:net';

export interface CuttingProxy {
  url: string;
  /** Cuts every connection once `bytes` more have gone towards the server. */
  cutAfter(bytes: number, options?: { stayDown?: boolean }): void;
  /** Lets connections through again. */
  heal(): void;
  /** How many times the line was cut. */
  readonly cuts: number;
  close(): Promise<void>;
}

export async function startProxy(target: string): Promise<CuttingProxy> {
  const { hostname, port } = new URL(target);
  const open = new Set<Socket>();
  let budget: number | null = null;
  let stayDown = false;
  let down = false;
  let cuts = 0;

  const cut = () => {
    cuts += 1;
    budget = null;
    down = stayDown;
    for (const socket of open) socket.destroy();
    open.clear();
  };

  const server = createServer((client) => {
    if (down) {
      client.destroy();
      return;
    }
    const upstream = connect(Number(port), hostname);
    open.add(client);
    open.add(upstream);
    client.on('data', (data: Buffer) => {
      if (budget !== null) {
        budget -= data.length;
        if (budget <= 0) return cut();
      }
      upstream.write(data);
    });
    upstream.on('data', (data: Buffer) => client.write(data));
    const close = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('close', close);
    upstream.on('close', close);
    client.on('error', close);
    upstream.on('error', close);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return {
    url,
    cutAfter(bytes, options = {}) {
      budget = bytes;
      stayDown = options.stayDown ?? false;
    },
    heal() {
      down = false;
      budget = null;
    },
    get cuts() {
      return cuts;
    },
    async close() {
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
