/**
 * What every baseline server shares with the real one: it listens on 127.0.0.1 at a port the
 * system picks, prints `Listening on <url>` as `npm start` does (the runner waits for that
 * line), and stops on SIGTERM.
 */
import type { Server } from 'node:http';

export function listen(server: Server): void {
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no address');
    console.log(`Listening on http://127.0.0.1:${address.port}`);
  });
  process.once('SIGTERM', () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
}
