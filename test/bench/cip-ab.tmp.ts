import { readFileSync } from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { openSync } from 'node:fs';
import { cleanUpOnExit, cleanup, freePort, tempDir } from './processes.ts';
import { seed } from './setup.ts';
import { venueConfig } from '../helpers/venue.ts';
import { pdfBytes, split, uploadChunks, MB } from './transfer.ts';
cleanUpOnExit();
const cpu = (pid: number) => { const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' '); return (Number(f[11]) + Number(f[12])) * 10; };
const children: Array<ReturnType<typeof spawn>> = [];
try {
  const servers: Array<{ name: string; url: string; pid: number; token: string }> = [];
  for (const [name, root] of [['old', '/tmp/cip/old'], ['new', '/work/wt-chunks-in-place']] as const) {
    const dataDir = path.join(tempDir(), `data-${name}`);
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const seeded = await seed(dataDir, url);
    const log = path.join(tempDir(), `${name}.log`);
    const child = spawn(process.execPath, ['server/main.ts'], { cwd: root, env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', BASE_URL: url, DATA_DIR: dataDir, LOG_LEVEL: 'info', UPLOAD_HUMAN_VERIFICATION_AFTER: '0' }, stdio: ['ignore', openSync(log, 'w'), openSync(log, 'a')] });
    children.push(child);
    for (let i = 0; i < 100 && !readFileSync(log, 'utf8').includes('Listening on'); i++) await new Promise((r) => setTimeout(r, 100));
    const res = await fetch(`${url}/venues`, { method: 'POST', headers: { authorization: `Bearer ${seeded.adminToken}`, 'content-type': 'application/json' }, body: JSON.stringify(venueConfig('Bench.org/2027')) });
    if (res.status !== 200) throw new Error(String(res.status));
    servers.push({ name, url, pid: child.pid!, token: seeded.authorToken });
  }
  const shared = split(pdfBytes(50 * MB), 5 * MB);
  const results: Record<string, { wall: number[]; cpu: number[] }> = { old: { wall: [], cpu: [] }, new: { wall: [], cpu: [] } };
  const rounds = Number(process.argv[2] ?? 8);
  for (let i = 0; i < rounds; i++) {
    for (const s of i % 2 ? [...servers].reverse() : servers) {
      const first = Buffer.from(shared[0]!); first.write(`u ${i} ${Date.now()}`, 16);
      const id = `ab-${i}`;
      const c0 = cpu(s.pid);
      const r = await uploadChunks({ url: `${s.url}/attachment/chunk`, headers: { authorization: `Bearer ${s.token}` }, fields: (index: number, total: number) => ({ name: 'pdf', invitationId: 'Bench.org/2027/-/Submission', clientUploadId: id, chunkIndex: index, totalChunks: total }) }, [first, ...shared.slice(1)]);
      if (!(r.last as { url?: string }).url) throw new Error('no url');
      if (i === 0) continue;
      results[s.name]!.wall.push(r.seconds * 1000);
      results[s.name]!.cpu.push(cpu(s.pid) - c0);
    }
  }
  const med = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
  for (const [name, r] of Object.entries(results)) console.log(name, 'median wall', med(r.wall).toFixed(0), 'ms (', (50000 / med(r.wall)).toFixed(0), 'MB/s ), median server CPU', med(r.cpu), 'ms; walls', r.wall.map((w) => w.toFixed(0)).join(' '));
} finally {
  for (const c of children) c.kill('SIGTERM');
  await cleanup();
}
