/**
 * The attack: `GET /pdf/{sha1}.pdf` answered 403 for a PDF stored here that the caller may not
 * read and 404 for one that is not stored. A PDF's address is its SHA-1, so anyone holding a
 * file (a leaked draft, a submission to another venue) could learn whether someone had stored
 * it here, and so that it was submitted. Both now answer the same 404.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pdfBytes, sha1, submitPaper, venueWithAuthor } from '../attachments/helpers.ts';
import { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';

let server: TestServer;
let author: Client;
let authorId: string;

beforeAll(async () => {
  server = await startServer();
  ({ author, authorId } = await venueWithAuthor(server));
});
afterAll(() => server.close());

describe('GET /pdf/{id}', () => {
  it('answers a PDF one may not read exactly as one that does not exist', async () => {
    const data = pdfBytes(3000);
    const { url, note } = await submitPaper(author, authorId, data);
    const body = { url };
    expect(note.status).toBe(200);
    expect((await author.get(body.url)).status).toBe(200);

    const stranger = (await loggedIn(server, (await createActiveUser(server)).email)).client;
    const missing = `/pdf/${sha1(pdfBytes(3000))}.pdf`;
    // Signed in but not a reader, and a guest.
    for (const reader of [stranger, new Client(server.url)]) {
      const stored = await reader.get(body.url);
      const absent = await reader.get(missing);
      expect(stored.status).toBe(404);
      expect(absent.status).toBe(404);
      // Alike but for the file's name and each answer's own request id.
      expect(stored.body).toEqual({ ...absent.body, message: absent.body.message.replace(missing.slice(5), body.url.slice(5)), details: { reqId: expect.any(String) } });
    }
  });
});
