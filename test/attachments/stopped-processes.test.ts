import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownerIsGone, PROCESS_OWNER } from '../../server/attachments/owners.ts';
import { TestClock } from '../helpers/clock.ts';
import { runningMark, stoppedMark } from '../helpers/marks.ts';
import { sendMultipart } from '../helpers/http.ts';
import { startServer, tempDir } from '../helpers/server.ts';
import { createActiveUser } from '../helpers/users.ts';
import { pdfBytes, SUBMISSION, venueWithAuthor } from './helpers.ts';

/** The pid of a process that has ended. */
const endedPid = () => spawnSync(process.execPath, ['-e', '']).pid;
/** This machine's tag, as the owners of its temporary files carry it. */
const host = PROCESS_OWNER.split('.')[2];
const otherHost = host === '00000000' ? '11111111' : '00000000';

/** The row of a chunked upload being assembled by `owner`, its lease renewed at `updatedAt`. */
function assembling(profileId: string, clientUploadId: string, owner: string, updatedAt: number) {
  return {
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
    created_at: Date.now() - 60_000,
    updated_at: updatedAt,
  };
}

describe('whether the process that wrote a temporary file has stopped', () => {
  it('is not for this process, is for an earlier start with the same pid, and asks the system about others of this machine', () => {
    expect(ownerIsGone(PROCESS_OWNER)).toBe(false);
    expect(ownerIsGone(`${process.pid}.${randomUUID()}.${host}`)).toBe(true);
    expect(ownerIsGone(`${process.ppid}.${randomUUID()}.${host}`)).toBe(false);
    expect(ownerIsGone(`${endedPid()}.${randomUUID()}.${host}`)).toBe(true);
    // Written before owners carried their machine: the machine that shared the folder then.
    expect(ownerIsGone(`${endedPid()}.${randomUUID()}`)).toBe(true);
    // Recorded before owners were, or unreadable: nobody can be waiting for it.
    expect(ownerIsGone(null)).toBe(true);
    expect(ownerIsGone('garbage')).toBe(true);
  });

  it("never is for another machine's process: its pids mean nothing here", () => {
    expect(ownerIsGone(`${endedPid()}.${randomUUID()}.${otherHost}`)).toBe(false);
    expect(ownerIsGone(`${process.pid}.${randomUUID()}.${otherHost}`)).toBe(false);
  });
});

describe('a server starting on a data folder a stopped process worked in', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await tempDir();
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("gives back the assemblies of stopped processes and removes their temporary files, and leaves a running process's alone", async () => {
    const first = await startServer({}, dir);
    const { id: profileId } = await createActiveUser(first, { fullname: 'Stopped Uploader' });
    // An assembly's lease is its row's `updated_at`, renewed every few seconds while it runs:
    // one not renewed for a minute was left by a process that stopped, on whatever machine; one
    // of this machine whose process has stopped is given back however recent.
    const row = (clientUploadId: string, owner: string, updatedAt: number) => assembling(profileId, clientUploadId, owner, updatedAt);
    const stopped = `${endedPid()}.${randomUUID()}.${host}`;
    const running = `${process.ppid}.${randomUUID()}.${host}`;
    const elsewhere = `${process.ppid}.${randomUUID()}.${otherHost}`;
    await first.service.db('chunked_uploads').insert([
      row('stopped', stopped, Date.now()),
      row('running', running, Date.now()),
      row('elsewhere, renewed', elsewhere, Date.now()),
      row('elsewhere, not renewed', `${process.ppid}.${randomUUID()}.${otherHost}`, Date.now() - 60_000),
    ]);
    await first.close();
    const tmp = path.join(dir, 'tmp');
    await writeFile(path.join(tmp, `${stopped}~${randomUUID()}`), 'half an assembly');
    await writeFile(path.join(tmp, `${running}~${randomUUID()}`), 'still being written');
    await writeFile(path.join(tmp, randomUUID()), 'named before owners were');

    const second = await startServer({}, dir);
    try {
      const states = await second.service.db('chunked_uploads').orderBy('client_upload_id').select('client_upload_id', 'status', 'assembly_owner');
      expect(states).toEqual([
        { client_upload_id: 'elsewhere, not renewed', status: 'receiving', assembly_owner: null },
        { client_upload_id: 'elsewhere, renewed', status: 'assembling', assembly_owner: elsewhere },
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

describe("a server starting where another pid space's processes of this kernel worked (a restarted container's predecessor, a container beside it)", () => {
  it('gives back what a stopped one held and removes its temporary files at once, by its mark; a running one keeps its own', async () => {
    const dir = await tempDir();
    const first = await startServer({}, dir);
    const { id: profileId } = await createActiveUser(first, { fullname: 'Restarted Uploader' });
    // Pid 1 of each namespace, as in containers: their marks tell a stopped process from a running one.
    const [predecessorId, besideId] = [randomUUID(), randomUUID()];
    const besideHost = host === '22222222' ? '33333333' : '22222222';
    const predecessor = `1.${predecessorId}.${otherHost}`;
    const beside = `1.${besideId}.${besideHost}`;
    await first.service.db('chunked_uploads').insert([assembling(profileId, 'predecessor', predecessor, Date.now()), assembling(profileId, 'beside', beside, Date.now())]);
    await first.close();
    const tmp = path.join(dir, 'tmp');
    await writeFile(path.join(tmp, `${predecessor}~${randomUUID()}`), 'half an assembly');
    await writeFile(path.join(tmp, `${beside}~${randomUUID()}`), 'still being written');
    stoppedMark(dir, otherHost, 1, predecessorId);
    const running = await runningMark(dir, besideHost, 1, besideId);
    try {
      const second = await startServer({}, dir);
      try {
        const states = await second.service.db('chunked_uploads').orderBy('client_upload_id').select('client_upload_id', 'status', 'assembly_owner');
        expect(states).toEqual([
          { client_upload_id: 'beside', status: 'assembling', assembly_owner: beside },
          { client_upload_id: 'predecessor', status: 'receiving', assembly_owner: null },
        ]);
        expect((await readdir(tmp)).map((name) => name.slice(0, name.indexOf('~')))).toEqual([beside]);
      } finally {
        await second.close();
      }
    } finally {
      await running.stop();
    }
  });
});

describe('an assembly held by a process of another machine', () => {
  it('is waited for while its lease is renewed, and taken over once it has not been for 15 s', async () => {
    const clock = new TestClock();
    const server = await startServer({}, undefined, { now: clock.now });
    try {
      const { author } = await venueWithAuthor(server);
      const data = pdfBytes(200_000);
      const send = (i: number) =>
        sendMultipart(author, 'PUT', '/attachment/chunk', { name: 'pdf', invitationId: SUBMISSION, clientUploadId: 'held-elsewhere', chunkIndex: i, totalChunks: 2 }, {
          filename: 'paper.pdf',
          data: data.subarray(i * 100_000, (i + 1) * 100_000),
        });
      expect((await send(0)).status).toBe(200);
      // Claimed just now by a process this machine cannot ask about: only its lease tells.
      const holder = `${process.ppid}.${randomUUID()}.${otherHost}`;
      const rows = () => server.service.db('chunked_uploads').where({ client_upload_id: 'held-elsewhere' });
      await rows().update({ status: 'assembling', assembly_owner: holder, updated_at: clock.now() });
      let answered = false;
      const last = send(1).finally(() => (answered = true));
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(answered).toBe(false);
      expect(await rows().first('status', 'assembly_owner')).toEqual({ status: 'assembling', assembly_owner: holder });
      // Its lease has not been renewed for 15 s: its process has stopped, wherever it ran.
      clock.advance(15_001);
      expect((await last).body).toEqual({ url: expect.stringMatching(/^\/pdf\/[0-9a-f]{40}\.pdf$/) });
      expect(await rows().first('status')).toEqual({ status: 'done' });
    } finally {
      await server.close();
    }
  });
});
