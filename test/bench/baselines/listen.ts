/**
 * What every baseline server shares with the real one: it listens on 127.0.0.1 at a port the
 * system picks, prints `Listening on <url>` as `npm start` does (the runner waits for that
 * line), and stops on SIGTERM.
 *
 * `ready`, when given, runs with the URL before the line is printed: a server that must know
 * its own address (node-oidc-provider's issuer) finishes setting up there, and no request can
 * come before the runner reads the line.
 */
import type { Server } from 'node:http';

export function listen(server: Server, ready?: (url: string) => void): void {
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no address');
    const url = `http://127.0.0.1:${address.port}`;
    ready?.(url);
    console.log(`Listening on ${url}`);
  });
  process.once('SIGTERM', () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
}
