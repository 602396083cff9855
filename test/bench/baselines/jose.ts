/**
 * Row 4's baseline: RS256 signatures per second with `jose` alone, as the token endpoint
 * signs ID tokens (a 2048-bit key, a payload of the same claims), with 16 signatures in
 * flight so both cores and the thread pool are kept busy. Prints one JSON line.
 *
 * Usage: node test/bench/baselines/jose.ts <seconds>
 */
import { generateKeyPair, SignJWT } from 'jose';

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

async function signFor(ms: number): Promise<number> {
  const until = performance.now() + ms;
  let count = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (performance.now() < until) {
        await sign();
        count += 1;
      }
    }),
  );
  return count;
}

await signFor(1000);
const started = performance.now();
const count = await signFor(seconds * 1000);
console.log(JSON.stringify({ perSecond: count / ((performance.now() - started) / 1000) }));
