/**
 * After each test file (its own `afterAll` hooks run first: its servers and processes are closed by
 * then), the temporary folders it made with `tempDir` are removed (`test/helpers/temp-dirs.ts`).
 */
import { afterAll } from 'vitest';
import { removeTempDirs } from '../helpers/temp-dirs.ts';

afterAll(removeTempDirs);
