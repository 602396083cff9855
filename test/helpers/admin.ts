import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { childEnv } from './server.ts';

const run = promisify(execFile);

export interface AdminRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `npm run admin -- ...args` as an operator would (the same script, on the same Node), in a
 * process of its own with the environment `env` adds to the test's (`childEnv`), and answers its
 * exit code and output, whether it succeeded or not.
 */
export async function runAdmin(env: Record<string, string>, ...args: string[]): Promise<AdminRun> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['server/cli/admin.ts', ...args], { env: await childEnv(env) });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as AdminRun;
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}
