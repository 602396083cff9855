/**
 * The writer every received file goes to disk through (`StagedFileWriter`): pieces of any size
 * are copied into two staging buffers and written a megabyte at a time, in order, whatever the
 * stream does; a failure or a destroy mid-way closes the file and leaves no write behind.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { StagedFileWriter } from '../../server/attachments/store/staged-writer.ts';
import { tempDir } from '../helpers/server.ts';

/** `total` bytes in pieces of uneven sizes (1 byte to 200 KB), as a socket and a parser hand them over. */
function pieces(total: number): Buffer[] {
  const data = randomBytes(total);
  const out: Buffer[] = [];
  for (let offset = 0, i = 0; offset < total; i += 1) {
    const size = Math.min(total - offset, [1, 65_536, 200_000, 7, 131_072][i % 5]!);
    out.push(data.subarray(offset, offset + size));
    offset += size;
  }
  return out;
}

describe('StagedFileWriter', () => {
  it('writes every byte in order, across several staging buffers and a last partial one', async () => {
    const dir = await tempDir();
    for (const total of [0, 1, 1024 * 1024, 3 * 1024 * 1024 + 12_345]) {
      const parts = pieces(total);
      const file = path.join(dir, `f${total}`);
      await pipeline(Readable.from(parts), new StagedFileWriter(file));
      expect((await readFile(file)).equals(Buffer.concat(parts))).toBe(true);
    }
  });

  it('two files received at once, sharing the pool of staging buffers, are each their own bytes', async () => {
    const dir = await tempDir();
    const sources = [pieces(3 * 1024 * 1024 + 101), pieces(4 * 1024 * 1024 + 7)];
    /** Pieces handed over one turn of the event loop apart, so the two writers interleave. */
    async function* slowly(parts: Buffer[]) {
      for (const part of parts) {
        await new Promise((resolve) => setImmediate(resolve));
        yield part;
      }
    }
    await Promise.all(sources.map((parts, i) => pipeline(Readable.from(slowly(parts)), new StagedFileWriter(path.join(dir, `both${i}`)))));
    for (const [i, parts] of sources.entries()) expect((await readFile(path.join(dir, `both${i}`))).equals(Buffer.concat(parts))).toBe(true);
  });

  it('never replaces a file that is there (opened exclusively)', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'taken');
    await pipeline(Readable.from([Buffer.from('first')]), new StagedFileWriter(file));
    await expect(pipeline(Readable.from([Buffer.from('second')]), new StagedFileWriter(file))).rejects.toMatchObject({ code: 'EEXIST' });
    expect(await readFile(file, 'utf8')).toBe('first');
  });

  it('a source that fails mid-way ends the writer with the error, its file closed and no write pending', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'cut');
    const source = new Readable({ read() {} });
    const writer = new StagedFileWriter(file);
    const done = pipeline(source, writer);
    source.push(randomBytes(2 * 1024 * 1024 + 5));
    await new Promise((resolve) => setTimeout(resolve, 20));
    source.destroy(new Error('the client went away'));
    await expect(done).rejects.toThrow('the client went away');
    if (!writer.closed) await once(writer, 'close');
    // What was sent whole before the cut is on disk; nothing is written after the close.
    const size = (await stat(file)).size;
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect((await stat(file)).size).toBe(size);
  });
});
