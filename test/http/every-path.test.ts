/**
 * On every path that takes input: a missing required field, an unknown field and an over-limit
 * value each get a 400 Error body naming the field, and nothing is written.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';

let server: TestServer;
let client: Client;

beforeAll(async () => {
  server = await startServer();
  const user = await createActiveUser(server, { role: 'superuser' });
  client = (await loggedIn(server, user.email)).client;
});
afterAll(async () => {
  await server.close();
});

const TABLES = ['profiles', 'profile_emails', 'profile_usernames', 'groups', 'group_members', 'sessions', 'account_tokens', 'settings', 'institutions', 'audit_log', 'rate_limits'];

async function everything() {
  const state: Record<string, unknown[]> = {};
  for (const table of TABLES) state[table] = await server.service.db(table).select();
  return state;
}

const long = (n: number) => 'a'.repeat(n);
const email255 = `${long(245)}@example.org`;

type Case = [name: string, method: 'GET' | 'POST' | 'PUT', path: string, body: unknown, error: string, field: string];

const cases: Case[] = [
  ['register: missing email', 'POST', '/register', { password: 'Good-Password1', fullname: 'A B', token: 'dev-ok' }, 'MissingRequiredError', 'email'],
  ['register: unknown field', 'POST', '/register', { email: 'a@b.org', password: 'Good-Password1', fullname: 'A B', token: 'dev-ok', age: 3 }, 'AdditionalPropertiesError', 'age'],
  ['register: over-long email', 'POST', '/register', { email: email255, password: 'Good-Password1', fullname: 'A B', token: 'dev-ok' }, 'ValidationError', 'email'],
  ['login: missing password', 'POST', '/login', { id: 'a@b.org' }, 'MissingRequiredError', 'password'],
  ['login: unknown field', 'POST', '/login', { id: 'a@b.org', password: 'x', remember: true }, 'AdditionalPropertiesError', 'remember'],
  ['login: over-long id', 'POST', '/login', { id: long(255), password: 'x' }, 'ValidationError', 'id'],
  ['activate: unknown field', 'PUT', '/activate/some-token', { content: {}, extra: 1 }, 'AdditionalPropertiesError', 'extra'],
  ['activate: over-long pronouns', 'PUT', '/activate/some-token', { content: { pronouns: long(51) } }, 'ValidationError', 'content/pronouns'],
  ['activate: token in the body', 'PUT', '/activate/some-token', { token: 'other' }, 'AdditionalPropertiesError', 'token'],
  ['activatable: over-long token', 'GET', `/activatable/${long(201)}`, undefined, 'ValidationError', 'token'],
  ['resend: missing id', 'POST', '/activatable', {}, 'MissingRequiredError', 'id'],
  ['resend: unknown field', 'POST', '/activatable', { id: 'a@b.org', please: true }, 'AdditionalPropertiesError', 'please'],
  ['resend: over-long id', 'POST', '/activatable', { id: long(255) }, 'ValidationError', 'id'],
  ['resettable: missing id', 'POST', '/resettable', { token: 'dev-ok' }, 'MissingRequiredError', 'id'],
  ['resettable: unknown field', 'POST', '/resettable', { id: 'a@b.org', token: 'dev-ok', why: 'x' }, 'AdditionalPropertiesError', 'why'],
  ['resettable: over-long id', 'POST', '/resettable', { id: long(255), token: 'dev-ok' }, 'ValidationError', 'id'],
  ['resettable token: over-long', 'GET', `/resettable/${long(201)}`, undefined, 'ValidationError', 'token'],
  ['reset: missing password', 'PUT', '/reset/some-token', {}, 'MissingRequiredError', 'password'],
  ['reset: unknown field', 'PUT', '/reset/some-token', { password: 'Good-Password1', confirm: 'x' }, 'AdditionalPropertiesError', 'confirm'],
  ['reset: over-long password (more than 256 characters)', 'PUT', '/reset/some-token', { password: `Aa1${long(254)}` }, 'ValidationError', 'password'],
  ['confirm: missing alternate', 'POST', '/user/confirm', {}, 'MissingRequiredError', 'alternate'],
  ['confirm: unknown field', 'POST', '/user/confirm', { alternate: 'a@b.org', x: 1 }, 'AdditionalPropertiesError', 'x'],
  ['confirm: over-long alternate', 'POST', '/user/confirm', { alternate: long(255) }, 'ValidationError', 'alternate'],
  ['guest confirm: over-long alternate', 'POST', '/user/confirm/some-token', { alternate: long(255) }, 'ValidationError', 'alternate'],
  ['activatelink: missing email', 'PUT', '/activatelink', { token: '123456' }, 'MissingRequiredError', 'email'],
  ['activatelink: unknown field', 'PUT', '/activatelink', { email: 'a@b.org', token: '123456', y: 2 }, 'AdditionalPropertiesError', 'y'],
  ['activatelink: empty code', 'PUT', '/activatelink/some-token', { email: 'a@b.org', token: '' }, 'ValidationError', 'token'],
  ['moderate: missing id', 'POST', '/profile/moderate', { decision: 'block' }, 'MissingRequiredError', 'id'],
  ['moderate: unknown field', 'POST', '/profile/moderate', { id: '~A1', decision: 'block', now: true }, 'AdditionalPropertiesError', 'now'],
  ['moderate: unknown decision', 'POST', '/profile/moderate', { id: '~A1', decision: 'ban' }, 'ValidationError', 'decision'],
  ['impersonate: missing groupId', 'POST', '/impersonate', {}, 'MissingRequiredError', 'groupId'],
  ['impersonate: empty groupId', 'POST', '/impersonate', { groupId: '' }, 'ValidationError', 'groupId'],
  ['tildeusername: unknown parameter', 'GET', '/tildeusername?first=A&last=B&suffix=Jr', undefined, 'AdditionalPropertiesError', 'suffix'],
  ['tildeusername: over-long fullname', 'GET', `/tildeusername?fullname=${long(301)}`, undefined, 'ValidationError', 'fullname'],
  ['profiles: unknown parameter', 'GET', '/profiles?name=x', undefined, 'AdditionalPropertiesError', 'name'],
  ['edit profile: missing signatures', 'POST', '/profiles', { content: { pronouns: 'she/her' } }, 'MissingRequiredError', 'signatures'],
  ['edit profile: unknown field', 'POST', '/profiles', { signatures: ['~A_B1'], content: {}, colour: 'red' }, 'AdditionalPropertiesError', 'colour'],
  ['edit profile: over-long pronouns', 'POST', '/profiles', { signatures: ['~A_B1'], content: { pronouns: long(51) } }, 'ValidationError', 'content/pronouns'],
  ['profiles: over-long id', 'GET', `/profiles?id=${long(255)}`, undefined, 'ValidationError', 'id'],
];

describe('every path refuses bad input, naming the field, and writes nothing', () => {
  it.each(cases)('%s', async (_name, method, path, body, error, field) => {
    const before = await everything();
    const res = await client.request(method, path, body);
    expect(res.status).toBe(400);
    const reasons: Array<{ name: string; details?: { path?: string } }> = res.body.errors ?? [res.body];
    expect(reasons).toContainEqual(expect.objectContaining({ name: error, details: expect.objectContaining({ path: field }) }));
    expect(res.body.message).toEqual(expect.any(String));
    expect(await everything()).toEqual(before);
  });
});
