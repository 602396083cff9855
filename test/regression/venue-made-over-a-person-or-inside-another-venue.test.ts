/**
 * Found with issue 12, item 3 (see invitation-replaced-by-another-venue). `POST /venues` took any
 * id: a person's tilde id or email, an id not yet registered, or one inside another venue's
 * invitations, and made groups there. Venue creation refuses them, naming `venueId`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser } from '../helpers/users.ts';
import { venueConfig } from '../helpers/venue.ts';
import { superUser } from './helpers.ts';

let server: TestServer;
let root: Client;
const OUTER = 'Conf.org';
beforeAll(async () => {
  server = await startServer();
  root = await superUser(server);
  expect((await root.post('/venues', venueConfig(OUTER))).status).toBe(200);
});
afterAll(async () => {
  await server.close();
});

describe('a new venue', () => {
  it('is never made over a person, an email, or inside another venue\'s invitations', async () => {
    const person = await createActiveUser(server);
    for (const venueId of [person.id, '~Not_Yet_Registered1', person.email, `${OUTER}/-/Sub`, 'a//b']) {
      const res = await root.post('/venues', venueConfig(venueId));
      expect(res.status, venueId).toBe(400);
      expect(res.body.errors?.[0]?.details ?? res.body.details, venueId).toEqual(expect.objectContaining({ path: 'venueId' }));
    }
  });
});
