/**
 * A new venue's authors group is named `<venueId>/<authorName>`; a name that made an existing group
 * (`Service/Superusers` under a venue `Service`, the super users group) took it over, and
 * `authorName: Program_Chairs` made the authors the venue's organisers. Both are refused, and the
 * existing group is left as it was.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { venueConfig } from '../helpers/venue.ts';
import { superUser } from './helpers.ts';

let server: TestServer;
let root: Client;
beforeAll(async () => {
  server = await startServer();
  root = await superUser(server);
});
afterAll(async () => {
  await server.close();
});

describe('a new venue', () => {
  it('never takes over an existing group: an authors group named like the super users group is refused', async () => {
    const res = await root.post('/venues', venueConfig('Service', { authorName: 'Superusers' }));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ name: 'ValidationError', message: 'The group Service/Superusers already exists', details: { path: 'venueId' } });
    const group = await server.service.db('groups').where({ id: 'Service/Superusers' }).first();
    expect(JSON.parse(group.data).domain).toBeUndefined();
    expect(await server.service.db('groups').where({ id: 'Service' }).first()).toBeUndefined();
    // Nor makes its authors its organisers.
    const chairs = await root.post('/venues', venueConfig('Chairs.org', { authorName: 'Program_Chairs' }));
    expect(chairs.body).toMatchObject({ status: 400, details: { path: 'authorName' } });
  });
});
