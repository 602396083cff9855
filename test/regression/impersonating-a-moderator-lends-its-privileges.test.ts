/**
 * Found by an independent review of the accounts work. A read-only impersonation of a moderator
 * (by an organiser named among the moderator's impersonators) lent the moderator's rights, and so
 * showed what only moderators see, such as other people's emails. An impersonation that may only
 * read never carries the privileges of the person impersonated.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';
import { bearerClient } from './helpers.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.close();
});

const bearer = (token: string) => bearerClient(server, token);

describe('impersonation sessions', () => {
  it('of a moderator by someone who may only read do not lend the moderator\'s privileges', async () => {
    const organiser = await createActiveUser(server);
    const moderator = await createActiveUser(server, { role: 'moderator' });
    const other = await createActiveUser(server);
    const { AccountsRepository } = await import('../../server/accounts/repository.ts');
    await new AccountsRepository(server.service.db).groups.upsert(moderator.id, { impersonators: [organiser.id] }, [moderator.email], Date.now());
    const { token } = await loggedIn(server, organiser.email);
    const imp = bearer((await bearer(token).post('/impersonate', { groupId: moderator.id })).body.token);
    const seen = await imp.get(`/profiles?id=${encodeURIComponent(other.id)}`);
    expect(seen.status).toBe(200);
    // Others' email lists are answered empty (the real platform's clients read them on every profile).
    expect(seen.body.profiles[0].content.emails).toEqual([]);
    expect(JSON.stringify(seen.body)).not.toContain(other.email);
  });
});
