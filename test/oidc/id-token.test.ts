/**
 * `idTokenMeanwhile` signs an ID token while the grant's statements run; a grant refused
 * meanwhile never reads it. A signature that then fails must not be an unhandled rejection,
 * which would end the process.
 */
import { describe, expect, it } from 'vitest';
import { idTokenMeanwhile } from '../../server/oidc/id-token.ts';
import type { Provider } from '../../server/oidc/provider.ts';
import type { ClientRecord } from '../../server/oidc/repository.ts';

describe('an ID token signed while the grant is stored', () => {
  it('that fails to sign for a grant refused meanwhile is no unhandled rejection, and fails whoever reads it', async () => {
    const unhandled: unknown[] = [];
    const note = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', note);
    try {
      const noKey = { keys: { signer: () => Promise.reject(new Error('no signing key')) } } as unknown as Provider;
      const sign = () => idTokenMeanwhile(noKey, { id: 'app' } as ClientRecord, { profileId: '~A_B1', authTime: 0, nonce: null, sid: null }, { sub: '~A_B1' }, 'access-token', 0);
      sign(); // the grant was refused: nobody reads it
      const read = sign();
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(unhandled).toEqual([]);
      await expect(read).rejects.toThrow('no signing key');
    } finally {
      process.off('unhandledRejection', note);
    }
  });
});
