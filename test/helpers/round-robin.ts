/**
 * A small HTTP load balancer for tests: each request goes to the next server in turn (round
 * robin), as a proxy in front of an install's processes would send it. `pin(i)` sends the next
 * request to server `i` instead, for a test that wants a step on a given process; `served`
 * counts what each server answered. Only `node:http`: the request and the answer are streamed
 * through untouched (bodies of any size, cookies, redirects), with `X-Forwarded-For` added.
 */
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RoundRobin {
  url: string;
  /** The servers behind it; set once they listen (their address is known only then). */
  targets: string[];
  /** How many requests each target was sent. */
  readonly served: number[];
  /** The next request goes to `targets[index]`. */
  pin(index: number): void;
  close(): Promise<void>;
}

/** Starts the balancer on 127.0.0.1 at `port` (0: one the system picks). */
export async function startRoundRobin(port = 0): Promise<RoundRobin> {
  let next = 0;
  let pinned: number | null = null;
  const balancer: RoundRobin = {
    url: '',
    targets: [],
    served: [],
    pin(index) {
      pinned = index;
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
  const server: Server = createServer((req: IncomingMessage, res) => {
    const count = balancer.targets.length;
    if (count === 0) {
      res.writeHead(503).end('no servers yet');
      return;
    }
    const index = pinned ?? next++ % count;
    pinned = null;
    balancer.served[index] = (balancer.served[index] ?? 0) + 1;
    const target = new URL(balancer.targets[index]!);
    const forwarded = [req.headers['x-forwarded-for'], req.socket.remoteAddress].filter(Boolean).join(', ');
    const upstream = request(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, 'x-forwarded-for': forwarded } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.rawHeaders);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(upstream);
  });
  // An idle client connection is closed by the client (fetch: after 4 s), never by the
  // balancer: with Node's default of 5 s, a test process slowed by a loaded machine could send
  // its next request on a connection the balancer had just closed (ECONNRESET), as a real
  // balancer set to close first would make clients see.
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  balancer.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return balancer;
}
