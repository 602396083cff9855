/**
 * Row 6's baseline: a bare `node:http` server that streams the file part of each multipart
 * request to a new file on disk with busboy and answers once it is written. Nothing is
 * checked, hashed or assembled.
 *
 * Usage: node test/bench/baselines/busboy.ts <folder to write into>
 */
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { createServer } from 'node:http';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import busboy from 'busboy';
import { listen } from './listen.ts';

const folder = process.argv[2] ?? '';

const server = createServer((req, res) => {
  const parser = busboy({ headers: req.headers });
  const written: Array<Promise<string>> = [];
  parser.on('file', (_name, stream) => {
    const file = path.join(folder, randomUUID());
    written.push(pipeline(stream, createWriteStream(file, { flags: 'wx' })).then(() => file));
  });
  parser.on('close', () => {
    void Promise.all(written).then(
      (files) => {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ ok: true }));
        // Not part of the measurement: only so ten 50 MB uploads do not pile up on disk.
        for (const file of files) void unlink(file);
      },
      (error: unknown) => {
        res.statusCode = 500;
        res.end(String(error));
      },
    );
  });
  req.pipe(parser);
});
listen(server);
