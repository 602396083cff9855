/**
 * What a chunk of an upload under way asks the database (rows 6 and 11 of `npm run bench`): its
 * invitation and its upload's row are read once per request, however many steps ask for them
 * (the limit and the place before the body is read, the checks after), and the chunk is
 * recorded by a transaction of two statements. Counted from Knex's `query` event.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Client, sendMultipart } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { pdfBytes, SUBMISSION, venueWithAuthor } from './helpers.ts';

let server: TestServer;
let author: Client;
beforeAll(async () => {
  server = await startServer();
  ({ author } = await venueWithAuthor(server));
});
afterAll(() => server.close());

const send = (chunkIndex: number) =>
  sendMultipart(author, 'PUT', '/attachment/chunk', { name: 'pdf', invitationId: SUBMISSION, clientUploadId: 'counted', chunkIndex, totalChunks: 3 }, { filename: 'p.pdf', data: pdfBytes(50_000) });

it('a middle chunk reads its invitation once, checks no invitee rule again, and is recorded in two statements', async () => {
  expect((await send(1)).status).toBe(200);
  const sent: string[] = [];
  const listener = (query: { sql: string }) => sent.push(query.sql.replace(/\s+/g, ' ').trim());
  server.service.db.on('query', listener);
  try {
    expect((await send(2)).body).toEqual({ 1: 'completed', 2: 'completed', 3: 'missing' });
  } finally {
    server.service.db.off('query', listener);
  }
  const reading = (table: string) => sent.filter((sql) => new RegExp(`^select .* from [\`"]?${table}[\`"]?( |$)`, 'i').test(sql));
  expect(reading('invitations')).toHaveLength(1);
  // The invitee rule's readings (the person's usernames and emails) are the first chunk's only.
  expect(reading('profile_usernames')).toHaveLength(0);
  expect(reading('profile_emails')).toHaveLength(0);
  const begin = sent.findIndex((sql) => /^begin/i.test(sql));
  const commit = sent.findIndex((sql, i) => i > begin && /^commit/i.test(sql));
  expect(begin).toBeGreaterThanOrEqual(0);
  expect(commit - begin - 1).toBe(2);
});
