/**
 * A new venue's `submissionId` could lie inside an existing venue nested in it (`Nest.org` with
 * `Nest.org/2027/-/Sub`), so its submissions were made inside the other venue. It is refused,
 * naming `submissionId`, and nothing is stored.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { venueConfig } from '../helpers/venue.ts';
import { storedInvitation, superUser } from './helpers.ts';

let server: TestServer;
let root: Client;
beforeAll(async () => {
  server = await startServer();
  root = await superUser(server);
});
afterAll(async () => {
  await server.close();
});

const stored = (id: string) => storedInvitation(root, id);

describe('a new venue', () => {
  it('never puts its submissions inside a venue nested in it', async () => {
    expect((await root.post('/venues', venueConfig('Nest.org/2027'))).status).toBe(200);
    const res = await root.post('/venues', venueConfig('Nest.org', { submissionId: 'Nest.org/2027/-/Sub' }));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ name: 'ValidationError', message: 'submissionId lies inside the venue Nest.org/2027', details: { path: 'submissionId' } });
    expect(await stored('Nest.org/2027/-/Sub')).toBeUndefined();
    expect((await root.post('/venues', venueConfig('Nest.org'))).status).toBe(200);
  });
});
