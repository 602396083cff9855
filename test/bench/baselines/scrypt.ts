/**
 * Row 5's baseline: `crypto.scrypt` alone with the parameters of a stored password hash (the
 * runner passes those of a bench account, so they are the ones login really uses), two at a
 * time as the server's hash queue allows (one per core). Prints one JSON line.
 *
 * Usage: node test/bench/baselines/scrypt.ts <N> <r> <p> <key bytes> <concurrency> <seconds>
 */
import { randomBytes, scrypt } from 'node:crypto';
import { printRate } from './rate.ts';

const [N = 0, r = 0, p = 0, keyLength = 0, concurrency = 0, seconds = 0] = process.argv.slice(2).map(Number);
const options = { N, r, p, maxmem: 256 * N * r * p };

const derive = () =>
  new Promise<void>((resolve, reject) => {
    scrypt('Bench-Password-9', randomBytes(16), keyLength, options, (err) => (err ? reject(err) : resolve()));
  });

await printRate(derive, { concurrency, warmupMs: 500, seconds });
