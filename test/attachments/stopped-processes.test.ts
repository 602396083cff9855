import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownerIsGone, PROCESS_OWNER } from '../../server/attachments/owners.ts';
import { startServer, tempDir } from '../helpers/server.ts';
import { createActiveUser } from '../helpers/users.ts';

/** The pid of a process that has ended. */
const endedPid = () => spawnSync(process.execPath, ['-e', '']).pid;

describe('whether the process that owns a piece of upload work has stopped', () => {
  it('is not for this process, is for an earlier start with the same pid, and asks the system about others', () => {
    expect(ownerIsGone(PROCESS_OWNER)).toBe(false);
    expect(ownerIsGone(`${process.pid}.${randomUUID()}`)).toBe(true);
    expect(ownerIsGone(`${process.ppid}.${randomUUID()}`)).toBe(false);
    expect(ownerIsGone(`${endedPid()}.${randomUUID()}`)).toBe(true);
    // Recorded before owners were, or unreadable: nobody can be waiting for it.
    expect(ownerIsGone(null)).toBe(true);
    expect(ownerIsGone('garbage')).toBe(true);
  });
});

describe('a server starting on a data folder a stopped process worked in', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await tempDir();
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("gives back its assemblies and removes its temporary files, and leaves a running process's alone", async () => {
    const first = await startServer({}, dir);
    const { id: profileId } = await createActiveUser(first, { fullname: 'Stopped Uploader' });
    const row = (clientUploadId: string, owner: string) => ({
      id: randomUUID(),
      profile_id: profileId,
      client_upload_id: clientUploadId,
      invitation: 'Venue/-/Submission',
      field: 'pdf',
      extension: 'pdf',
      total_chunks: 2,
      index_base: 0,
      status: 'assembling',
      assembly_owner: owner,
      created_at: Date.now(),
      updated_at: Date.now(),
    });
    const stopped = `${endedPid()}.${randomUUID()}`;
    const running = `${process.ppid}.${randomUUID()}`;
    await first.service.db('chunked_uploads').insert([row('stopped', stopped), row('running', running)]);
    await first.close();
    const tmp = path.join(dir, 'tmp');
    await writeFile(path.join(tmp, `${stopped}~${randomUUID()}`), 'half an assembly');
    await writeFile(path.join(tmp, `${running}~${randomUUID()}`), 'still being written');
    await writeFile(path.join(tmp, randomUUID()), 'named before owners were');

    const second = await startServer({}, dir);
    try {
      const states = await second.service.db('chunked_uploads').orderBy('client_upload_id').select('client_upload_id', 'status', 'assembly_owner');
      expect(states).toEqual([
        { client_upload_id: 'running', status: 'assembling', assembly_owner: running },
        { client_upload_id: 'stopped', status: 'receiving', assembly_owner: null },
      ]);
      expect((await readdir(tmp)).map((name) => name.slice(0, name.indexOf('~')))).toEqual([running]);
      expect(second.logs.join('')).toContain('uploads cut by a stop recovered');
    } finally {
      await second.close();
    }
  });
});
