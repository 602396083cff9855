/**
 * A registered client's id was 24 characters of base64url, so one in 32 began with `-` or `_`.
 * `npm run admin -- oidc-client rotate-secret <id>` then read an id beginning with `-` as an
 * option ("Unknown option '-C…'"): the registration test failed so, once, on a full run. Ids
 * are still 24 characters of base64url (144 random bits), never beginning with either.
 */
import { describe, expect, it } from 'vitest';
import { newClientId } from '../../server/oidc/registration.ts';

describe('a new client id', () => {
  it('never begins with - or _, and stays 24 characters of base64url', () => {
    const ids = Array.from({ length: 5000 }, newClientId);
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9][A-Za-z0-9_-]{23}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
