/**
 * Issue 12, defect 5. The attack: 120 concurrent `PUT /reset/<made-up token>` from guests. Each
 * one hashed its new password before looking at the token, so they filled the shared
 * password-hashing queue (2 running, 32 waiting) and real sign-ins got 429 until it drained.
 * Now the token is checked before any hashing, every route that hashes counts tries per client
 * address, one address may hold only a few places in the queue, and sign-ins wait ahead of new
 * passwords with a share of the line kept for them.
 */
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

describe('PUT /reset with made-up tokens', () => {
  it('120 at once hash nothing, answer 4xx Error bodies, and a sign-in meanwhile succeeds', async () => {
    const user = await createActiveUser(server);
    const flood = Array.from({ length: 120 }, (_, i) =>
      new Client(server.url).request('PUT', `/reset/made-up-token-${i}`, { password: 'New-Password-123' }),
    );
    const signIn = new Client(server.url).post('/login', { id: user.email, password: PASSWORD });
    const [answers, login] = await Promise.all([Promise.all(flood), signIn]);
    expect(login.status).toBe(200);
    for (const res of answers) {
      expect([400, 429]).toContain(res.status);
      expect(res.body).toMatchObject({ status: res.status, name: expect.any(String), message: expect.any(String) });
    }
    // Tries are counted per address: past the limit, 429.
    expect(answers.filter((r) => r.status === 429).length).toBeGreaterThan(0);
    expect(answers.filter((r) => r.status === 400).every((r) => r.body.name === 'ValidationError')).toBe(true);
  });
});

describe('the hashing queue', () => {
  const hold = () => {
    let release = () => {};
    const done = new Promise<void>((resolve) => (release = resolve));
    return { done, release };
  };

  it('gives one client address only a few places', async () => {
    const queue = new HashQueue(1, 32, { perOwner: 2 });
    const gate = hold();
    const first = queue.run(() => gate.done, 'guest');
    const second = queue.run(async () => 'two', 'guest');
    const third = await queue.run(async () => 'three', 'guest').catch((e: unknown) => e);
    expect(third).toBeInstanceOf(AppError);
    expect((third as AppError).toBody()).toMatchObject({ status: 429, name: 'TooManyError' });
    // Another address still gets in line.
    const other = queue.run(async () => 'other', 'someone-else');
    gate.release();
    await first;
    expect(await second).toBe('two');
    expect(await other).toBe('other');
    // Places are given back: the address may hash again.
    expect(await queue.run(async () => 'again', 'guest')).toBe('again');
  });

  it('keeps places for sign-ins that new passwords cannot take, and lets sign-ins go first', async () => {
    const queue = new HashQueue(1, 4, { reservedForSignIn: 2 });
    const gate = hold();
    const order: string[] = [];
    const running = queue.run(() => gate.done);
    const others = [queue.run(async () => void order.push('new-1')), queue.run(async () => void order.push('new-2'))];
    const refused = await queue.run(async () => 'new-3').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(AppError);
    const signIn = queue.run(async () => void order.push('sign-in'), undefined, 'sign-in');
    gate.release();
    await Promise.all([running, ...others, signIn]);
    expect(order).toEqual(['sign-in', 'new-1', 'new-2']);
  });

  it('never runs more than its concurrency, even as places are handed over', async () => {
    const queue = new HashQueue(2, 32);
    let now = 0;
    let most = 0;
    const work = async () => {
      now += 1;
      most = Math.max(most, now);
      await new Promise((resolve) => setImmediate(resolve));
      now -= 1;
    };
    await Promise.all(Array.from({ length: 20 }, (_, i) => queue.run(work, `owner-${i}`)));
    expect(most).toBe(2);
  });
});
