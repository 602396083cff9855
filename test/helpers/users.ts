import type { TestServer } from './server.ts';
import { Client } from './http.ts';

export const PASSWORD = 'Correct-Horse-9';

let counter = 0;

/** An active user created through the same service call as `npm run admin -- user add`. */
export async function createActiveUser(
  server: TestServer,
  opts: { email?: string; fullname?: string; role?: 'superuser' | 'moderator' } = {},
): Promise<{ id: string; email: string }> {
  counter += 1;
  const email = opts.email ?? `user${counter}-${process.pid}@example.org`;
  const id = await server.service.services.accounts.createUser({
    email,
    password: PASSWORD,
    fullname: opts.fullname ?? 'Grace Hopper',
    state: 'Active',
    role: opts.role,
  });
  return { id, email };
}

/** A client that has logged in as the user (cookies kept in its jar). */
export async function loggedIn(server: TestServer, id: string, password = PASSWORD): Promise<{ client: Client; token: string }> {
  const client = new Client(server.url);
  const res = await client.post('/login', { id, password });
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { client, token: res.body.token };
}
