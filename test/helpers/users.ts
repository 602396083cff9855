import type { TestServer } from './server.ts';
import { Client } from './http.ts';
import { lastMailTo } from './outbox.ts';

export const PASSWORD = 'Correct-Horse-9';

let counter = 0;

/** An active user created through the same service call as `npm run admin -- user add`. */
export async function createActiveUser(
  server: TestServer,
  opts: { email?: string; fullname?: string; role?: 'superuser' | 'moderator' } = {},
): Promise<{ id: string; email: string }> {
  counter += 1;
  const email = opts.email ?? `user${counter}-${process.pid}@example.org`;
  const id = await server.service.services.signUp.createUser({
    email,
    password: PASSWORD,
    fullname: opts.fullname ?? 'Grace Hopper',
    state: 'Active',
    role: opts.role,
  });
  return { id, email };
}

/** An active person made straight through the services (caller tests, no HTTP): their email. */
export async function activePerson(services: { signUp: { createUser: TestServer['service']['services']['signUp']['createUser'] } }): Promise<string> {
  counter += 1;
  const email = `person${counter}-${process.pid}@example.org`;
  await services.signUp.createUser({ email, password: PASSWORD, fullname: 'Pat Person', state: 'Active' });
  return email;
}

/** A client that has logged in as the user (cookies kept in its jar). */
export async function loggedIn(server: TestServer, id: string, password = PASSWORD): Promise<{ client: Client; token: string }> {
  const client = new Client(server.url);
  const res = await client.post('/login', { id, password });
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { client, token: res.body.token };
}

/** Registers through `POST /register` and returns the activation link's token from the outbox. */
export async function registerAndGetToken(
  server: TestServer,
  body: { email: string; fullname?: string; name?: { first: string; middle?: string; last: string }; password?: string },
): Promise<{ id: string; token: string; code: string }> {
  const { lastMailTo } = await import('./outbox.ts');
  const res = await new Client(server.url).post('/register', {
    token: 'dev-ok',
    password: PASSWORD,
    ...(body.name ? {} : { fullname: body.fullname ?? 'Rosalind Franklin' }),
    ...body,
  });
  if (res.status !== 200) throw new Error(`register failed: ${res.status} ${JSON.stringify(res.body)}`);
  const mail = await lastMailTo(server.dataDir, body.email);
  const token = /token=([\w-]+)/.exec(mail.text)?.[1];
  const code = /code: (\d{6})/.exec(mail.text)?.[1];
  if (!token || !code) throw new Error(`no activation link in: ${mail.text}`);
  return { id: res.body.id, token, code };
}

/** A history entry, as activation requires one. */
export const HISTORY = [{ position: 'PhD Student', institution: { name: 'Example University', domain: 'example.org' }, start: 2021 }];

/** Adds `email` to the signed-in person's profile as the emails page does: asked for, then confirmed with its mailed code. */
export async function confirmAddress(server: TestServer, client: Client, email: string): Promise<void> {
  const asked = await client.post('/user/confirm', { alternate: email });
  if (asked.status !== 200) throw new Error(`/user/confirm: ${asked.status} ${JSON.stringify(asked.body)}`);
  const code = /code: (\d{6})/.exec((await lastMailTo(server.dataDir, email)).text)?.[1];
  const confirmed = await client.request('PUT', '/activatelink', { email, token: code });
  if (confirmed.status !== 200) throw new Error(`/activatelink: ${confirmed.status} ${JSON.stringify(confirmed.body)}`);
}
