/** What several regression tests share. */
import { Client } from '../helpers/http.ts';
import type { TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';

/** A client of `server` that sends `token` as its bearer token. */
export function bearerClient(server: TestServer, token: string): Client {
  const client = new Client(server.url);
  client.bearer = token;
  return client;
}

/** A client signed in as a new super user of `server`. */
export async function superUser(server: TestServer): Promise<Client> {
  const admin = await createActiveUser(server, { role: 'superuser' });
  return (await loggedIn(server, admin.email)).client;
}

/** The invitation `id` as a super user reads it back, or undefined. */
export const storedInvitation = async (root: Client, id: string) => (await root.get(`/invitations?id=${encodeURIComponent(id)}`)).body.invitations?.[0];
