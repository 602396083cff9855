import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HashQueue } from '../../server/accounts/passwords.ts';
import { AppError } from '../../shared/errors.ts';
import { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.close();
});

describe('rate limits', () => {
  it('ten wrong passwords lock the account for a while, even for the right password', async () => {
    const user = await createActiveUser(server);
    const http = new Client(server.url);
    for (let i = 0; i < 10; i += 1) {
      expect((await http.post('/login', { id: user.email, password: `Wrong-Password-${i}` })).status).toBe(400);
    }
    const locked = await http.post('/login', { id: user.email, password: PASSWORD });
    expect(locked.status).toBe(429);
    expect(locked.body).toMatchObject({ status: 429, name: 'TooManyError', details: { retryAfter: expect.any(Number) } });
    expect(locked.body.details.retryAfter).toBeGreaterThan(800);
    // Another account from the same address is not locked.
    const other = await createActiveUser(server);
    expect((await http.post('/login', { id: other.email, password: PASSWORD })).status).toBe(200);
  });

  it('keeps its counters in the database, where every process sees them', async () => {
    const rows = await server.service.db('rate_limits').where('key', 'like', 'loginAccount:%');
    expect(rows.length).toBeGreaterThan(0);
  });

  it('limits reset mails per account', async () => {
    const user = await createActiveUser(server);
    const http = new Client(server.url);
    for (let i = 0; i < 5; i += 1) {
      expect((await http.post('/resettable', { id: user.email, token: 'dev-ok' })).status).toBe(200);
    }
    const res = await http.post('/resettable', { id: user.email, token: 'dev-ok' });
    expect(res.status).toBe(429);
    expect(res.body.name).toBe('TooManyError');
  });

  it('limits activation re-sends per account', async () => {
    const http = new Client(server.url);
    for (let i = 0; i < 5; i += 1) expect((await http.post('/activatable', { id: 'resend-many@example.org' })).status).toBe(200);
    expect((await http.post('/activatable', { id: 'resend-many@example.org' })).status).toBe(429);
  });
});

describe('the scrypt queue', () => {
  it('runs a bounded number of hashes and refuses past its queue with 429', async () => {
    const queue = new HashQueue(1, 1);
    let release = () => {};
    const running = queue.run(() => new Promise<void>((resolve) => (release = resolve)));
    const waiting = queue.run(async () => 'second');
    const refused = await queue.run(async () => 'third').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(AppError);
    expect((refused as AppError).toBody()).toMatchObject({ status: 429, name: 'TooManyError' });
    release();
    await running;
    expect(await waiting).toBe('second');
    expect(await queue.run(async () => 'after')).toBe('after');
  });
});
