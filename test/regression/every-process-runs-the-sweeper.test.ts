/**
 * Issue 15: every server process ran the sweeper (abandoned uploads, expired sign-in requests,
 * codes and tokens) on its own timer, so with several processes on one database the sweeps ran
 * side by side, each deleting the same rows and files. Now one process at a time sweeps: the one
 * holding the `sweeper` lease (a row of `leases`, taken with one conditional statement); it keeps
 * it while it runs, and another takes it over when it stops or its lease runs out. The sweep also
 * deletes expired rate-limit counters, which nothing deleted on PostgreSQL.
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { PID_SPACE } from '../../server/processes.ts';
import { dropTestDatabase } from '../helpers/database.ts';
import { startServer, tempDir, type TestServer } from '../helpers/server.ts';

let dir: string;
const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
  await rm(dir, { recursive: true, force: true });
  await dropTestDatabase(dir);
});

/** Two server processes of one install: one data folder, so one database. */
async function twoServers(): Promise<[TestServer, TestServer]> {
  dir = await tempDir();
  const a = await startServer({}, dir);
  servers.push(a);
  const b = await startServer({}, dir);
  servers.push(b);
  return [a, b];
}

describe('the sweeper, with several processes on one database', () => {
  it('runs in one process at a time, which keeps the lease from one sweep to the next', async () => {
    const [a, b] = await twoServers();
    const first = await Promise.all([a.service.sweep(), b.service.sweep()]);
    expect(first.filter(Boolean)).toHaveLength(1);
    const again = await Promise.all([a.service.sweep(), b.service.sweep()]);
    expect(again).toEqual(first);
    expect(await a.service.db('leases').count({ n: '*' })).toEqual([{ n: 1 }]);
  });

  it('is taken over by another process when the holder stops', async () => {
    const [a, b] = await twoServers();
    expect(await a.service.sweep()).toBe(true);
    expect(await b.service.sweep()).toBe(false);
    servers.splice(servers.indexOf(a), 1);
    await a.close();
    expect(await b.service.sweep()).toBe(true);
  });

  it('is taken over by another process when the holder died and its lease ran out', async () => {
    const [a, b] = await twoServers();
    expect(await a.service.sweep()).toBe(true);
    // A holder killed without letting go: its lease stays until its time passes.
    await b.service.db('leases').update({ held_until: Date.now() - 1 });
    expect(await b.service.sweep()).toBe(true);
    expect(await a.service.sweep()).toBe(false);
  });

  it('is taken over at once from a process of this machine that was killed holding it, not when its lease runs out', async () => {
    const [a] = await twoServers();
    // A process that held the lease for half an hour more, and is gone (its pid ended).
    const gone = spawnSync(process.execPath, ['-e', '0']).pid;
    await a.service.db('leases').insert({ name: 'sweeper', holder: `${hostname()} ${gone} ${PID_SPACE} ${randomUUID()}`, held_until: Date.now() + 30 * 60_000 }).onConflict('name').merge();
    expect(await a.service.sweep()).toBe(true);
    // A holder still running (this process's other server) is left alone.
    const [, b] = servers as [TestServer, TestServer];
    expect(await b.service.sweep()).toBe(false);
  });

  it('deletes expired rate-limit counters and keeps the others', async () => {
    const [a] = await twoServers();
    const now = Date.now();
    await a.service.db('rate_limits').insert([
      { key: 'test:expired', points: 3, expire: now - 1000 },
      { key: 'test:current', points: 1, expire: now + 60_000 },
    ]);
    expect(await a.service.sweep()).toBe(true);
    expect(await a.service.db('rate_limits').where('key', 'like', 'test:%').pluck('key')).toEqual(['test:current']);
  });
});
