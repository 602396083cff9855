/**
 * What a chunk of an upload under way asks the database (rows 6 and 11 of `npm run bench`): its
 * invitation and its upload's row are read once per request, however many steps ask for them
 * (the limit and the place before the body is read, the checks after), and the chunk is
 * recorded by one statement (on PostgreSQL, after its upload's row is locked, in a transaction).
 * Counted from Knex's `query` event, by table and transaction: the server's background work
 * (mail, logout deliveries) shares the pool.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Client, sendMultipart } from '../helpers/http.ts';
import { TEST_POSTGRES_URL } from '../helpers/database.ts';
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

it('a middle chunk reads its invitation and its upload once, checks no invitee rule again, and is recorded in one statement', async () => {
  expect((await send(1)).status).toBe(200);
  const sent: Array<{ sql: string; tx: string | undefined }> = [];
  const listener = (query: { sql: string; __knexTxId?: string }) => sent.push({ sql: query.sql.replace(/\s+/g, ' ').trim(), tx: query.__knexTxId });
  server.service.db.on('query', listener);
  try {
    expect((await send(2)).body).toEqual({ 1: 'completed', 2: 'completed', 3: 'missing' });
  } finally {
    server.service.db.off('query', listener);
  }
  const reading = (table: string) => sent.filter(({ sql }) => new RegExp(`^select .* from [\`"]?${table}[\`"]?( |$)`, 'i').test(sql));
  expect(reading('invitations')).toHaveLength(1);
  // Its upload's row, by the client's id: read for its place before the body, and used again after it.
  expect(sent.filter(({ sql }) => /^select \* from [`"]?chunked_uploads[`"]? where [`"]?profile_id[`"]? = (\?|\$1)/i.test(sql))).toHaveLength(1);
  // The invitee rule's readings (the person's usernames and emails) are the first chunk's only.
  expect(reading('profile_usernames')).toHaveLength(0);
  expect(reading('profile_emails')).toHaveLength(0);
  // Whether the person may still author (`Viewer.mayAuthor`) and their roles are read with the
  // session: in its statement on SQLite, the roles in one more on PostgreSQL (`findWithProfile`).
  const session = expect.stringMatching(/ from [`"]?sessions[`"]? left join [`"]?profiles[`"]? /i);
  const roles = expect.stringMatching(/^select [`"]?group_id[`"]? from [`"]?group_members[`"]? where/i);
  // (Only the statements of those shapes: the server's background work may read profiles meanwhile.)
  const sessionOrRoles = /( from [`"]?sessions[`"]? left join |^select [`"]?group_id[`"]? from [`"]?group_members)/i;
  expect(sent.filter(({ sql }) => sessionOrRoles.test(sql)).map(({ sql }) => sql)).toEqual(TEST_POSTGRES_URL ? [session, roles] : [session]);
  // Once recorded, it stops counting as under way, then reads where its upload stands and which
  // other chunk requests of it are under way in one statement.
  const uploading = sent.filter(({ sql }) => /upload_|chunked_uploads/.test(sql));
  const left = uploading.findIndex(({ sql }) => /^delete from [`"]?upload_arrivals/i.test(sql));
  expect(left).toBeGreaterThan(-1);
  expect(uploading.slice(left + 1).map(({ sql }) => sql)).toEqual([expect.stringMatching(/upload_chunks.* union all .*upload_arrivals/i)]);
  // The chunk's record: one statement, whose trigger counts its bytes; on PostgreSQL, after the
  // upload's row is locked, in a transaction of those two.
  const records = sent.filter(({ sql }) => /^insert into [`"]?upload_chunks/i.test(sql));
  expect(records).toHaveLength(1);
  expect(sent.filter(({ sql }) => /^update [`"]?chunked_uploads/i.test(sql))).toEqual([]);
  const tx = records[0]!.tx;
  if (TEST_POSTGRES_URL) {
    expect(sent.filter((query) => query.tx === tx && !/^(begin|commit)/i.test(query.sql)).map(({ sql }) => sql)).toEqual([expect.stringMatching(/ for update$/i), records[0]!.sql]);
  } else {
    expect(tx).toBeUndefined();
  }
});

it('a first chunk creates its upload with how its client counts, and no statement settles it after', async () => {
  const sent: string[] = [];
  const listener = (query: { sql: string }) => sent.push(query.sql.replace(/\s+/g, ' ').trim());
  server.service.db.on('query', listener);
  try {
    const first = await sendMultipart(author, 'PUT', '/attachment/chunk', { name: 'pdf', invitationId: SUBMISSION, clientUploadId: 'counted-from-0', chunkIndex: 0, totalChunks: 2 }, { filename: 'p.pdf', data: pdfBytes(50_000) });
    expect(first.body).toEqual({ 0: 'completed', 1: 'missing' });
  } finally {
    server.service.db.off('query', listener);
  }
  expect(sent.filter((sql) => /^insert into [`"]?chunked_uploads[`"]? .*index_base/i.test(sql))).toHaveLength(1);
  expect(sent.filter((sql) => /^update [`"]?chunked_uploads[`"]? set [`"]?index_base/i.test(sql))).toEqual([]);
  expect(await server.service.db('chunked_uploads').where({ client_upload_id: 'counted-from-0' }).first('index_base')).toEqual({ index_base: 0 });
});
