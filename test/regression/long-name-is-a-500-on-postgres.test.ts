/**
 * The failure: on PostgreSQL a 300-character name was a 500: the column was `varchar(255)`
 * (Knex's `string()`), which SQLite does not enforce. Now the columns are text on both
 * databases, and the lengths are limited in the request schemas: a value too long is a 400
 * naming its field, whichever database runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { HISTORY, PASSWORD, registerAndGetToken } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.close();
});

describe('long text', () => {
  it('a 300-character name signs up; a 301-character one is a 400 naming fullname', async () => {
    const long = `${'A'.repeat(149)} ${'B'.repeat(150)}`;
    const { id } = await registerAndGetToken(server, { email: 'long.name@example.org', fullname: long });
    expect(id).toMatch(/^~A+_B+1$/);
    const refused = await new Client(server.url).post('/register', { token: 'dev-ok', email: 'longer@example.org', password: PASSWORD, fullname: `${long}C` });
    expect(refused.status).toBe(400);
    expect(refused.body.details).toEqual({ path: 'fullname', reqId: expect.any(String) });
  });

  it('activation keeps a 300-character position and refuses a 301-character one, naming it', async () => {
    const { token } = await registerAndGetToken(server, { email: 'long.position@example.org', fullname: 'Pat Position' });
    const tooLong = await new Client(server.url).request('PUT', `/activate/${token}`, { content: { history: [{ ...HISTORY[0], position: 'P'.repeat(301) }] } });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.details.path).toBe('content/history/0/position');
    const kept = await new Client(server.url).request('PUT', `/activate/${token}`, { content: { history: [{ ...HISTORY[0], position: 'P'.repeat(300) }] } });
    expect(kept.status).toBe(200);
  });
});
