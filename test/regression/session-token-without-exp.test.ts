/**
 * Issue 12, defect 14 (session tokens). The attack: a session token signed without `exp` (or
 * with an `iat` in the future, or a lifetime longer than any session) was accepted, so a token
 * that leaked once, or one minted by a process holding the key by mistake, was good forever.
 * Every session token must carry `exp` and `iat`, issued not in the future, for at most a week.
 */
import { decodeJwt, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '../helpers/http.ts';
import { startServer, type TestServer, sessionSecret } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.close();
});

async function forge(claims: { sub: string; sid: string }, shape: { iat?: number; exp?: number }): Promise<string> {
  const secret = await sessionSecret(server);
  let jwt = new SignJWT({ sid: claims.sid, ver: 0 }).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).setSubject(claims.sub).setIssuer(server.url).setAudience('session');
  if (shape.iat !== undefined) jwt = jwt.setIssuedAt(shape.iat);
  if (shape.exp !== undefined) jwt = jwt.setExpirationTime(shape.exp);
  return jwt.sign(new TextEncoder().encode(secret));
}

describe('session tokens', () => {
  it('are refused without exp, without iat, from the future or longer than a week', async () => {
    const user = await createActiveUser(server);
    const { token } = await loggedIn(server, user.email);
    const claims = { sub: user.id, sid: decodeJwt(token).sid as string };
    const now = Math.floor(Date.now() / 1000);
    const client = new Client(server.url);

    // The same claims with a sane iat and exp are let in: the forging itself is right.
    client.bearer = await forge(claims, { iat: now, exp: now + 600 });
    expect((await client.get('/profiles')).status).toBe(200);

    for (const shape of [{ iat: now }, { exp: now + 600 }, { iat: now + 3600, exp: now + 7200 }, { iat: now, exp: now + 30 * 24 * 3600 }]) {
      client.bearer = await forge(claims, shape);
      const res = await client.get('/profiles');
      expect(res.status, JSON.stringify(shape)).toBe(401);
      expect(res.body).toMatchObject({ status: 401, name: 'UnauthorizedError' });
    }
  });
});
