/**
 * Row 8's baseline: a bare `node:http` server answering every GET with one file,
 * `fs.createReadStream` piped to the socket, with its length and type.
 *
 * Usage: node test/bench/baselines/files.ts <file>
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import { listen } from './listen.ts';

const file = process.argv[2] ?? '';
const { size } = await stat(file);

const server = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/pdf', 'content-length': size });
  createReadStream(file).pipe(res);
});
listen(server);
