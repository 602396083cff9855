import { describe, expect, it } from 'vitest';
import { lacksRoom, LOW_SPACE_BYTES } from '../server/free-space.ts';

describe('the room a data folder needs to be ready', () => {
  const MiB = 1024 * 1024;
  it('is 64 MiB on a large file system, and 1 % of a small one', () => {
    // 100 GiB in 4 KiB blocks.
    const large = { blocks: (100 * 1024 * MiB) / 4096, bsize: 4096 };
    expect(lacksRoom({ ...large, bavail: LOW_SPACE_BYTES / 4096 })).toBeNull();
    expect(lacksRoom({ ...large, bavail: LOW_SPACE_BYTES / 4096 - 1 })).toMatch(/bytes free, below 67108864$/);
    // 3 MiB (a full test disk): 1 % of it, about 31 kB.
    const small = { blocks: (3 * MiB) / 1024, bsize: 1024 };
    expect(lacksRoom({ ...small, bavail: 0 })).not.toBeNull();
    expect(lacksRoom({ ...small, bavail: 31 })).toBeNull();
    expect(lacksRoom({ ...small, bavail: 30 })).not.toBeNull();
    expect(lacksRoom({ bavail: 10n ** 9n, blocks: 10n ** 9n, bsize: 4096n })).toBeNull();
  });
});
