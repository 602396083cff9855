/**
 * The failure (issue 24, defect 5): a person's `impersonators` (who may act as them) could be set
 * by nothing but SQL. Now a super user sets them with `PUT /impersonators`, and an operator with
 * `npm run admin -- impersonators set --user ID --by ID…`; both are audited, and only a super
 * user may.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childEnv, startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';

const run = promisify(execFile);
let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

const audits = (target: string) => server.service.db('audit_log').where({ target, action: 'impersonators.set' }).select('actor', 'details');

describe('who may impersonate a person', () => {
  it('is set by a super user with PUT /impersonators, after which the one named may impersonate, and is audited', async () => {
    const root = await createActiveUser(server, { role: 'superuser' });
    const target = await createActiveUser(server, { fullname: 'Tina Target' });
    const helper = await createActiveUser(server, { fullname: 'Hal Helper' });
    const asHelper = (await loggedIn(server, helper.email)).client;
    expect((await asHelper.post('/impersonate', { groupId: target.id })).status).toBe(403);

    const { client: asRoot } = await loggedIn(server, root.email);
    const set = await asRoot.request('PUT', '/impersonators', { user: target.email, impersonators: [helper.id] });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ id: target.id, impersonators: [helper.id] });
    const impersonated = await asHelper.post('/impersonate', { groupId: target.id });
    expect(impersonated.status).toBe(200);
    expect(impersonated.body.user.profile.id).toBe(target.id);
    expect(await audits(target.id)).toEqual([{ actor: root.id, details: expect.stringContaining(helper.id) }]);

    // An empty list takes the grant back.
    expect((await asRoot.request('PUT', '/impersonators', { user: target.id, impersonators: [] })).body).toEqual({ id: target.id, impersonators: [] });
    expect((await (await loggedIn(server, helper.email)).client.post('/impersonate', { groupId: target.id })).status).toBe(403);
  });

  it('is refused to anyone but a super user, and names what is wrong in a bad request', async () => {
    const person = await createActiveUser(server);
    const other = await createActiveUser(server);
    const { client } = await loggedIn(server, person.email);
    const refused = await client.request('PUT', '/impersonators', { user: other.id, impersonators: [person.id] });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ name: 'ForbiddenError' });
    expect(await audits(other.id)).toEqual([]);

    const root = await createActiveUser(server, { role: 'superuser' });
    const asRoot = (await loggedIn(server, root.email)).client;
    expect((await asRoot.request('PUT', '/impersonators', { user: '~Nobody_Here1', impersonators: [] })).body).toMatchObject({ status: 404, name: 'NotFoundError' });
    expect((await asRoot.request('PUT', '/impersonators', { user: other.id, impersonators: [''] })).status).toBe(400);
    expect((await asRoot.request('PUT', '/impersonators', { user: other.id, impersonators: [other.id] })).body).toMatchObject({ status: 400, details: { path: 'impersonators' } });
  });

  it('is set by an operator with npm run admin -- impersonators set', async () => {
    const target = await createActiveUser(server, { fullname: 'Otto Operated' });
    const helper = await createActiveUser(server, { fullname: 'Ida Impersonator' });
    const env = await childEnv({ DATA_DIR: server.dataDir });
    const { stdout } = await run(process.execPath, ['server/cli/admin.ts', 'impersonators', 'set', '--user', target.email, '--by', helper.id, '--by', helper.email], { env });
    expect(stdout.trim()).toBe(`${target.id}\t${helper.id} ${helper.email.toLowerCase()}`);
    expect(await audits(target.id)).toEqual([{ actor: 'operator', details: expect.stringContaining(helper.id) }]);
    const asHelper = (await loggedIn(server, helper.email)).client;
    expect((await asHelper.post('/impersonate', { groupId: target.id })).status).toBe(200);
  });
});
