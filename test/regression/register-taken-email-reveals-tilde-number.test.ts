/**
 * Issue 12, defect 14 (sign-up). The attack: `POST /register` answers a taken email like a new
 * one, but only a new one took the name's tilde number: register "Zed Quux" with the victim's
 * address, then `GET /tildeusername?fullname=Zed Quux`: `~Zed_Quux1` again meant the address
 * has an account, `~Zed_Quux2` meant it had not. Now a sign-up with a taken address reserves
 * the number it answered, as a real sign-up takes it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

const next = async (fullname: string) => (await new Client(server.url).get(`/tildeusername?fullname=${encodeURIComponent(fullname)}`)).body.username;
const register = (email: string, fullname: string) => new Client(server.url).post('/register', { token: 'dev-ok', email, password: PASSWORD, fullname });

describe('POST /register then GET /tildeusername', () => {
  it('looks the same whether the email was taken or new', async () => {
    const victim = await createActiveUser(server);

    const taken = await register(victim.email, 'Zed Quux');
    expect(taken.status).toBe(200);
    expect(taken.body).toEqual({ id: '~Zed_Quux1', status: 'ok' });
    const afterTaken = await next('Zed Quux');

    const fresh = await register('not-yet-taken@example.org', 'Yan Quux');
    expect(fresh.status).toBe(200);
    expect(fresh.body).toEqual({ id: '~Yan_Quux1', status: 'ok' });
    const afterFresh = await next('Yan Quux');

    expect(afterTaken).toBe('~Zed_Quux2');
    expect(afterFresh).toBe('~Yan_Quux2');
    // The reserved number is not handed to the next person of that name either.
    const later = await register('another-zed@example.org', 'Zed Quux');
    expect(later.body.id).toBe('~Zed_Quux2');
  });

  it('differs in letter case or white space of the taken address no more', async () => {
    const victim = await createActiveUser(server);
    const res = await register(victim.email.toUpperCase(), 'Xia Quux');
    expect(res.status).toBe(200);
    expect(await server.service.db('profile_emails').where({ email: victim.email })).toHaveLength(1);
    expect(await next('Xia Quux')).toBe('~Xia_Quux2');
  });
});
