import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '../helpers/http.ts';
import { lastMailTo, readOutbox } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';

let server: TestServer;
let moderator: Client;
let target: { id: string; email: string };

beforeAll(async () => {
  server = await startServer();
  const mod = await createActiveUser(server, { role: 'moderator', fullname: 'Mo Derator' });
  moderator = (await loggedIn(server, mod.email)).client;
  target = await createActiveUser(server, { fullname: 'Tar Get' });
});
afterAll(async () => {
  await server.close();
});

const ALL_STATES = ['Active', 'Active Institutional', 'Active Automatic', 'Inactive', 'Blocked', 'Rejected', 'Needs Moderation', 'Merged', 'Limited'] as const;
type State = (typeof ALL_STATES)[number];
const DECISIONS = ['accept', 'reject', 'block', 'unblock', 'delete', 'restore', 'limit'] as const;
type Decision = (typeof DECISIONS)[number];

/**
 * The transition table, written out cell by cell: the resulting state, or null when the
 * decision makes no sense there (400). `kept` means the state does not change (delete, restore).
 */
const ACTIVE_ROW = { accept: null, reject: null, block: 'Blocked', unblock: null, delete: 'kept', restore: null, limit: 'Limited' } as const;
const TABLE: Record<State, Record<Decision, State | 'kept' | 'previous' | null>> = {
  Active: ACTIVE_ROW,
  'Active Institutional': ACTIVE_ROW,
  'Active Automatic': ACTIVE_ROW,
  Inactive: { accept: null, reject: null, block: 'Blocked', unblock: null, delete: 'kept', restore: null, limit: null },
  Blocked: { accept: null, reject: null, block: null, unblock: 'previous', delete: 'kept', restore: null, limit: null },
  Rejected: { accept: 'Active', reject: null, block: 'Blocked', unblock: null, delete: 'kept', restore: null, limit: null },
  'Needs Moderation': { accept: 'Active', reject: 'Rejected', block: 'Blocked', unblock: null, delete: 'kept', restore: null, limit: null },
  Merged: { accept: null, reject: null, block: null, unblock: null, delete: null, restore: null, limit: null },
  Limited: { accept: 'Active', reject: null, block: 'Blocked', unblock: null, delete: 'kept', restore: null, limit: null },
};

async function setTarget(state: State, deleted: boolean) {
  const pastStates = [
    { state: 'Inactive', date: 1, setBy: target.id },
    { state: 'Active Automatic', date: 2, setBy: target.id },
    ...(state === 'Blocked' ? [{ state: 'Blocked', date: 3, setBy: 'someone' }] : [{ state, date: 3, setBy: 'someone' }]),
  ];
  await server.service.db('profiles').where({ id: target.id }).update({
    state,
    ddate: deleted ? 1234 : null,
    past_states: JSON.stringify(pastStates),
  });
}

const moderate = (decision: Decision, extra: Record<string, unknown> = {}) =>
  moderator.post('/profile/moderate', { id: target.id, decision, sendMail: false, ...extra });

describe('every cell of the transition table', () => {
  for (const state of ALL_STATES) {
    for (const decision of DECISIONS) {
      const expected = TABLE[state][decision];
      it(`${decision} on ${state} → ${expected ?? '400'}`, async () => {
        await setTarget(state, false);
        const res = await moderate(decision);
        if (expected === null) {
          expect(res.status).toBe(400);
          expect(res.body).toEqual({
            status: 400,
            name: 'ValidationError',
            message: `Cannot ${decision} a profile in state ${state}`,
            details: { path: 'decision', reqId: expect.any(String) },
          });
          const row = await server.service.db('profiles').where({ id: target.id }).first();
          expect(row).toMatchObject({ state, ddate: null });
          return;
        }
        expect(res.status).toBe(200);
        const resulting = expected === 'kept' ? state : expected === 'previous' ? 'Active Automatic' : expected;
        expect(res.body).toMatchObject({ id: target.id, state: resulting });
        expect(res.body.ddate).toEqual(decision === 'delete' ? expect.any(Number) : null);
      });
    }
    it(`delete on a deleted ${state} profile → 400, restore → ${state === 'Merged' ? '400' : 'undeleted'}`, async () => {
      await setTarget(state, true);
      expect((await moderate('delete')).status).toBe(400);
      const restored = await moderate('restore');
      if (state === 'Merged') {
        expect(restored.status).toBe(400);
      } else {
        expect(restored.status).toBe(200);
        expect(restored.body).toMatchObject({ state, ddate: null });
      }
    });
  }
});

describe('moderation', () => {
  it('is forbidden to anyone but moderators and super users', async () => {
    const user = await createActiveUser(server);
    const { client } = await loggedIn(server, user.email);
    const res = await client.post('/profile/moderate', { id: target.id, decision: 'block' });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ status: 403, name: 'ForbiddenError', message: 'Only moderators can moderate profiles', details: { reqId: expect.any(String) } });
  });

  it('an unknown profile is 404, a bad decision 400', async () => {
    expect((await moderator.post('/profile/moderate', { id: '~No_Body1', decision: 'block' })).status).toBe(404);
    const bad = await moderator.post('/profile/moderate', { id: target.id, decision: 'promote' });
    expect(bad.status).toBe(400);
    expect(bad.body.details).toEqual({ path: 'decision', reqId: expect.any(String) });
  });

  it('block ends every session; unblock returns to the state before', async () => {
    const user = await createActiveUser(server);
    const { client } = await loggedIn(server, user.email);
    expect((await moderator.post('/profile/moderate', { id: user.id, decision: 'block' })).body.state).toBe('Blocked');
    expect((await client.get('/profiles')).status).toBe(401);
    expect((await client.post('/refreshToken')).status).toBe(401);
    const back = await moderator.post('/profile/moderate', { id: user.email, decision: 'unblock' });
    expect(back.body.state).toBe('Active');
    expect(back.body.pastStates.map((p: { state: string }) => p.state)).toEqual(['Active', 'Blocked', 'Active']);
  });

  it('a profile never activated goes back to Inactive when unblocked', async () => {
    const user = await createActiveUser(server);
    await server.service.db('profiles').where({ id: user.id }).update({
      state: 'Inactive',
      past_states: JSON.stringify([{ state: 'Inactive', date: 1, setBy: user.id }]),
    });
    await moderator.post('/profile/moderate', { id: user.id, decision: 'block' });
    expect((await moderator.post('/profile/moderate', { id: user.id, decision: 'unblock' })).body.state).toBe('Inactive');
  });

  it('delete hides the profile and stops its logins; restore brings it back', async () => {
    const user = await createActiveUser(server);
    const { client } = await loggedIn(server, user.email);
    await moderator.post('/profile/moderate', { id: user.id, decision: 'delete' });
    expect((await client.get('/profiles')).status).toBe(401);
    const { client: other } = await loggedIn(server, (await createActiveUser(server)).email);
    expect((await other.get(`/profiles?id=${encodeURIComponent(user.id)}`)).body).toEqual({ profiles: [] });
    await moderator.post('/profile/moderate', { id: user.id, decision: 'restore' });
    expect((await loggedIn(server, user.email)).token).toBeTruthy();
  });

  it('a limited profile may still log in', async () => {
    const user = await createActiveUser(server);
    expect((await moderator.post('/profile/moderate', { id: user.id, decision: 'limit' })).body.state).toBe('Limited');
    expect((await loggedIn(server, user.email)).token).toBeTruthy();
  });

  it('reject mails the reason unless sendMail is false', async () => {
    const user = await createActiveUser(server);
    await server.service.db('profiles').where({ id: user.id }).update({ state: 'Needs Moderation' });
    const before = (await readOutbox(server.dataDir)).filter((m) => m.to === user.email).length;
    await moderator.post('/profile/moderate', { id: user.id, decision: 'reject', reason: 'Please add your institution', sendMail: true });
    const mail = await lastMailTo(server.dataDir, user.email);
    expect(mail.subject).toBe('Profile activation status');
    expect(mail.text).toContain('Please add your institution');
    await moderator.post('/profile/moderate', { id: user.id, decision: 'accept', sendMail: false });
    expect((await readOutbox(server.dataDir)).filter((m) => m.to === user.email).length).toBe(before + 1);
  });

  it('writes every decision to the audit log', async () => {
    const user = await createActiveUser(server);
    await moderator.post('/profile/moderate', { id: user.id, decision: 'limit', reason: 'spam' });
    const rows = await server.service.db('audit_log').where({ target: user.id });
    expect(rows).toEqual([expect.objectContaining({ actor: '~Mo_Derator1', action: 'moderate:limit', reason: 'spam', at: expect.any(Number) })]);
  });

  it('a moderator cannot moderate a super user; a super user can', async () => {
    const root = await createActiveUser(server, { role: 'superuser', fullname: 'Root User' });
    expect((await moderator.post('/profile/moderate', { id: root.id, decision: 'block' })).status).toBe(403);
    const admin = await createActiveUser(server, { role: 'superuser', fullname: 'Admin User' });
    const { client } = await loggedIn(server, admin.email);
    expect((await client.post('/profile/moderate', { id: root.id, decision: 'limit' })).status).toBe(200);
  });
});
