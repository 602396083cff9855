/**
 * The attack: `GET /pdf?ids=X&ids=X…` (and `GET /attachment?ids=…`) with the same note id 50
 * times made a 50-entry zip of one file: one request, fifty times the reading, compressing and
 * sending. Duplicates are merged: each note's file is in the zip once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pdfBytes, submitPaper, venueWithAuthor, type Client } from '../attachments/helpers.ts';
import { cookieHeader } from '../helpers/cookies.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let author: Client;
let authorId: string;

beforeAll(async () => {
  server = await startServer();
  ({ author, authorId } = await venueWithAuthor(server));
});
afterAll(() => server.close());

/** The number of entries of a zip: its central directory's headers. */
function entries(zip: Buffer): number {
  let count = 0;
  for (let at = zip.indexOf('PK\u0001\u0002', 0, 'latin1'); at >= 0; at = zip.indexOf('PK\u0001\u0002', at + 4, 'latin1')) count++;
  return count;
}

async function note(): Promise<string> {
  return (await submitPaper(author, authorId, pdfBytes(4000))).note.body.id;
}

describe('ids= with the same id many times', () => {
  it('makes a zip with each note once', async () => {
    const [a, b] = [await note(), await note()];
    const cookie = cookieHeader(author);
    const ids = [...Array.from({ length: 48 }, () => a), b, a].map((id) => `ids=${id}`).join('&');
    for (const path of [`/pdf?${ids}`, `/attachment?${ids}&name=pdf`]) {
      const res = await fetch(server.url + path, { headers: { cookie } });
      expect(res.status).toBe(200);
      expect(entries(Buffer.from(await res.arrayBuffer()))).toBe(2);
    }
  });
});
