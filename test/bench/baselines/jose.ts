/**
 * Row 4's baseline: RS256 signatures per second with `jose` alone, as the token endpoint
 * signs ID tokens (a 2048-bit key, a payload of the same claims), with 16 signatures in
 * flight so both cores and the thread pool are kept busy. Prints one JSON line.
 *
 * Usage: node test/bench/baselines/jose.ts <seconds>
 */
import { generateKeyPair, SignJWT } from 'jose';
import { printRate } from './rate.ts';

const seconds = Number(process.argv[2] ?? 5);
const { privateKey } = await generateKeyPair('RS256', { modulusLength: 2048 });
const claims = { sub: '~Bench_Signer1', name: 'Bench Signer', email: 'bench.signer@bench.example', email_verified: true, auth_time: 1, nonce: 'n', at_hash: 'x'.repeat(22) };

const sign = () =>
  new SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', kid: 'bench', typ: 'JWT' })
    .setIssuer('http://127.0.0.1:3000')
    .setAudience('bench-app')
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(privateKey);

await printRate(sign, { concurrency: 16, warmupMs: 1000, seconds });
