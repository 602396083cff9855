/** What several regression tests share. */
import { Client } from '../helpers/http.ts';
import type { TestServer } from '../helpers/server.ts';

/** A client of `server` that sends `token` as its bearer token. */
export function bearerClient(server: TestServer, token: string): Client {
  const client = new Client(server.url);
  client.bearer = token;
  return client;
}

/** The cookies a client holds, as a `Cookie` header. */
export const cookieOf = (client: Client): string => [...client.jar].map(([k, v]) => `${k}=${v}`).join('; ');
