import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '../helpers/http.ts';
import { readOutbox } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let smtp: SMTPServer;
let server: TestServer;
const received: Array<{ to: string; subject: string; text: string }> = [];

beforeAll(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onData(stream, session, done) {
      simpleParser(stream)
        .then((mail) => {
          received.push({ to: session.envelope.rcptTo[0]?.address ?? '', subject: mail.subject ?? '', text: mail.text ?? '' });
          done();
        })
        .catch(done);
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  const { port } = smtp.server.address() as AddressInfo;
  server = await startServer({ SMTP_URL: `smtp://127.0.0.1:${port}`, MAIL_FROM: 'Accounts <accounts@example.org>' });
});
afterAll(async () => {
  await server.close();
  await new Promise<void>((resolve) => smtp.close(() => resolve()));
});

describe('mail with SMTP_URL set', () => {
  it('goes over SMTP, and nothing is written to the outbox', async () => {
    const res = await new Client(server.url).post('/register', { token: 'dev-ok', email: 'smtp@example.org', password: 'Over-The-Wire1', fullname: 'Sam Smtp' });
    expect(res.status).toBe(200);
    // Mail goes out after the answer; reading the outbox waits for it.
    expect(await readOutbox(server.dataDir)).toEqual([]);
    expect(received).toEqual([{ to: 'smtp@example.org', subject: 'Signup confirmation', text: expect.stringMatching(/\/profile\/activate\?token=/) }]);
  });
});

describe('cookies behind https', () => {
  it('are Secure when BASE_URL is https', async () => {
    const secure = await startServer({ BASE_URL: 'https://accounts.example.org' });
    try {
      await secure.service.services.signUp.createUser({ email: 's@example.org', password: 'Secure-Cookie1', fullname: 'Sec Ure', state: 'Active' });
      const res = await new Client(secure.url).post('/login', { id: 's@example.org', password: 'Secure-Cookie1' });
      expect(res.cookies['service.accessToken']?.attributes).toMatch(/; Secure/);
      expect(res.cookies['service.refreshToken']?.attributes).toMatch(/; Secure/);
    } finally {
      await secure.close();
    }
  });
});
