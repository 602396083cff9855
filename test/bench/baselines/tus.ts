/**
 * Row 11's peer: `@tus/server` 2 with `@tus/file-store`, writing into a folder, at `/files`,
 * with its defaults: an upload is created with `POST` (its `Upload-Length`), and each chunk is
 * a `PATCH` of raw bytes at its `Upload-Offset`, appended to the one file.
 *
 * Usage: node test/bench/baselines/tus.ts <folder to write into>
 */
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import { FileStore } from '@tus/file-store';
import { Server } from '@tus/server';
import { listen } from './listen.ts';

const folder = process.argv[2] ?? '';
mkdirSync(folder, { recursive: true });
const tus = new Server({ path: '/files', datastore: new FileStore({ directory: folder }) });

listen(
  createServer((req, res) => {
    tus.handle(req, res).catch((error: unknown) => {
      res.statusCode = 500;
      res.end(String(error));
    });
  }),
);
