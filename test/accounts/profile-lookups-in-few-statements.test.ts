/**
 * Looking many profiles up at once (`POST /profiles/search` with `ids` or `emails`, the author
 * console's `GET /profiles?ids=`, a page of `GET /profiles/search`) reads them in a few
 * statements, however many are asked for: up to a thousand ids took one or two statements each,
 * which any signed-in person could ask for again and again. The answers are those the lookups
 * one by one gave: sorted by id, merged ids shown as their surviving profile, deleted and
 * unknown ones left out, emails to moderators only (others see none, or a search's domains).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statementsSent } from '../helpers/database.ts';
import type { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';

interface Shown {
  id: string;
  email?: string;
  content: { emails: string[]; emailsConfirmed: string[]; names?: Array<{ fullname: string }> };
}

let server: TestServer;
let member: Client;
let moderator: Client;
const people: Array<{ id: string; email: string }> = [];
let merged: { id: string; email: string };
let deleted: { id: string; email: string };

beforeAll(async () => {
  server = await startServer();
  member = (await loggedIn(server, (await createActiveUser(server, { fullname: 'Mia Member' })).email)).client;
  moderator = (await loggedIn(server, (await createActiveUser(server, { fullname: 'Max Moderator', role: 'moderator' })).email)).client;
  for (let i = 0; i < 12; i += 1) people.push(await createActiveUser(server, { fullname: `Lena Lookup`, email: `lena${i}@lookup.example.org` }));
  merged = await createActiveUser(server, { fullname: 'Otto Merged', email: 'otto@merged.example.org' });
  deleted = await createActiveUser(server, { fullname: 'Dora Deleted', email: 'dora@deleted.example.org' });
  const db = server.service.db;
  // Otto's profile was merged into the first Lena's; Dora's deleted.
  await db('profiles').where({ id: merged.id }).update({ state: 'Merged', merged_into: people[0]?.id });
  await db('profiles').where({ id: deleted.id }).update({ ddate: Date.now() });
});
afterAll(() => server.close());

/** How many statements the server sends while answering `ask`, and the answer. */
async function counted<T>(ask: () => Promise<T>): Promise<{ statements: number; answer: T }> {
  let answer: T | undefined;
  const sent = await statementsSent(server.service.db, async () => {
    answer = await ask();
  });
  return { statements: sent.length, answer: answer as T };
}

const byIds = async (client: Client, ids: string[]) => {
  const res = await client.post('/profiles/search', { ids });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.profiles as Shown[];
};

describe('ids', () => {
  it('are read in the same few statements for two ids as for fourteen', async () => {
    const few = await counted(() => byIds(member, [people[1]!.id, merged.id]));
    const many = await counted(() => byIds(member, [...people.map((p) => p.id), merged.id, deleted.id]));
    expect(few.answer).toHaveLength(2);
    expect(many.statements).toBe(few.statements);
    // The caller's session (unless read lately), the profiles by username, the survivors of merged ones.
    expect(many.statements).toBeLessThan(people.length);
  });

  it('answer as one by one: sorted, a merged id as its survivor, the deleted and unknown left out, no emails to others', async () => {
    const ids = ['~Nobody_Here1', deleted.id, merged.id, ...people.map((p) => p.id).reverse()];
    const shown = await byIds(member, ids);
    // Sorted by the ids asked for; Otto's is answered by the first Lena's profile.
    const expected = [...ids].sort().flatMap((id) => (id === merged.id ? [people[0]!.id] : id === deleted.id || id === '~Nobody_Here1' ? [] : [id]));
    expect(shown.map((p) => p.id)).toEqual(expected);
    for (const profile of shown) {
      expect(profile.content.emails).toEqual([]);
      expect(profile.content.emailsConfirmed).toEqual([]);
    }
  });

  it('show a moderator every profile’s emails, the deleted one too', async () => {
    const shown = await byIds(moderator, [people[3]!.id, deleted.id]);
    expect(shown.map((p) => [p.id, p.content.emails])).toEqual(
      [
        [people[3]!.id, [people[3]!.email]],
        [deleted.id, [deleted.email]],
      ].sort((a, b) => ((a[0] as string) < (b[0] as string) ? -1 : 1)),
    );
  });

  it('through GET /profiles?ids= too', async () => {
    const few = await counted(() => member.get(`/profiles?ids=${people.slice(0, 2).map((p) => p.id).join(',')}`));
    const many = await counted(() => member.get(`/profiles?ids=${people.map((p) => p.id).join(',')}`));
    expect(many.answer.status).toBe(200);
    expect(many.answer.body.profiles).toHaveLength(people.length);
    expect(many.statements).toBe(few.statements);
  });

  it('through GET /profiles?ids= repeated, or comma-joined with spaces: each profile once', async () => {
    const [a, b] = [people[0]!.id, people[1]!.id];
    const repeated = await member.get(`/profiles?ids=${a}&ids=${b}`);
    expect(repeated.status, JSON.stringify(repeated.body)).toBe(200);
    expect(repeated.body.profiles.map((p: Shown) => p.id)).toEqual([a, b].sort());
    const spaced = await member.get(`/profiles?ids=${encodeURIComponent(`${a}, ${b},${a}`)}`);
    expect(spaced.body.profiles.map((p: Shown) => p.id)).toEqual([a, b].sort());
  });
});

describe('emails', () => {
  it('are read in the same few statements for two addresses as for fourteen, each profile with the address it was found by', async () => {
    const ask = (emails: string[]) => member.post('/profiles/search', { emails });
    const few = await counted(() => ask(people.slice(0, 2).map((p) => p.email)));
    const many = await counted(() => ask([...people.map((p) => p.email), merged.email, deleted.email, 'nobody@lookup.example.org']));
    expect(many.statements).toBe(few.statements);
    const shown = many.answer.body.profiles as Shown[];
    // The merged and the deleted profile's addresses find nobody a member may see.
    expect(shown.map((p) => [p.id, p.email]).sort()).toEqual(people.map((p) => [p.id, p.email]).sort());
    for (const profile of shown) expect(profile.content.emails).toEqual([]);
  });
});

describe('a page of a search', () => {
  it('is read in the same few statements for two profiles as for twelve, with the domains others see', async () => {
    const few = await counted(() => member.get('/profiles/search?fullname=lena%20lookup&limit=2'));
    const many = await counted(() => member.get('/profiles/search?fullname=lena%20lookup&limit=20'));
    expect(many.statements).toBe(few.statements);
    expect(many.answer.body.count).toBe(12);
    const shown = many.answer.body.profiles as Shown[];
    expect(shown.map((p) => p.id)).toEqual(people.map((p) => p.id).sort());
    for (const profile of shown) expect(profile.content.emailsConfirmed).toEqual(['****@lookup.example.org']);
  });

  it('shows a moderator the addresses themselves', async () => {
    const res = await moderator.get('/profiles/search?fullname=lena%20lookup&limit=20');
    const shown = res.body.profiles as Shown[];
    expect(shown.map((p) => p.content.emails[0]).sort()).toEqual(people.map((p) => p.email).sort());
  });
});
