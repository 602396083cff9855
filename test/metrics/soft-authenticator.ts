/**
 * A passkey authenticator in the test's process, for tests that need passkey sign-ins but not a
 * browser (`test/accounts/passkeys.test.ts` drives a real one): a P-256 key made for the test,
 * `none` attestation, a discoverable credential that verifies its user (UP and UV), device-bound.
 * Its answers are the JSON a browser's `@simplewebauthn/browser` hands over, signed for real, so
 * the service checks them as it checks any.
 */
import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import type { AuthenticationResponseJSON, PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import { isoCBOR } from '@simplewebauthn/server/helpers';

/** Authenticator-data flags: user present, user verified, attested credential data included. */
const UP = 0x01;
const UV = 0x04;
const AT = 0x40;

const sha256 = (data: Uint8Array | string) => createHash('sha256').update(data).digest();
const b64url = (data: Uint8Array) => Buffer.from(data).toString('base64url');
const u16 = (n: number) => Buffer.from([(n >> 8) & 0xff, n & 0xff]);
const u32 = (n: number) => {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(n);
  return out;
};

export class SoftAuthenticator {
  readonly #key = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  readonly #credentialId = randomBytes(16);
  readonly #origin: string;
  #counter = 0;
  #userHandle: string | undefined;

  /** `origin`: the page's (the service's BASE_URL origin); the RP ID comes with the options. */
  constructor(origin: string) {
    this.#origin = origin;
  }

  #clientData(type: 'webauthn.create' | 'webauthn.get', challenge: string): Buffer {
    return Buffer.from(JSON.stringify({ type, challenge, origin: this.#origin, crossOrigin: false }));
  }

  /** Makes the credential: the answer to creation options. */
  register(options: PublicKeyCredentialCreationOptionsJSON): RegistrationResponseJSON {
    const rpId = options.rp.id ?? new URL(this.#origin).hostname;
    this.#userHandle = options.user.id;
    const jwk = this.#key.publicKey.export({ format: 'jwk' });
    const coseKey = new Map<number, number | Uint8Array>([
      [1, 2], // kty: EC2
      [3, -7], // alg: ES256
      [-1, 1], // crv: P-256
      [-2, Buffer.from(jwk.x ?? '', 'base64url')],
      [-3, Buffer.from(jwk.y ?? '', 'base64url')],
    ]);
    const authData = Buffer.concat([sha256(rpId), Buffer.from([UP | UV | AT]), u32(this.#counter), Buffer.alloc(16), u16(this.#credentialId.length), this.#credentialId, isoCBOR.encode(coseKey)]);
    const attestationObject = isoCBOR.encode(
      new Map<string, string | Uint8Array | Map<string, never>>([
        ['fmt', 'none'],
        ['attStmt', new Map<string, never>()],
        ['authData', authData],
      ]),
    );
    const id = b64url(this.#credentialId);
    return {
      id,
      rawId: id,
      type: 'public-key',
      response: { clientDataJSON: b64url(this.#clientData('webauthn.create', options.challenge)), attestationObject: b64url(attestationObject), transports: ['internal'] },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    };
  }

  /** Signs in: the answer to request options, with the next signature counter. */
  assert(options: Pick<PublicKeyCredentialRequestOptionsJSON, 'challenge' | 'rpId'>): AuthenticationResponseJSON {
    const rpId = options.rpId ?? new URL(this.#origin).hostname;
    this.#counter += 1;
    const clientData = this.#clientData('webauthn.get', options.challenge);
    const authData = Buffer.concat([sha256(rpId), Buffer.from([UP | UV]), u32(this.#counter)]);
    const signature = sign('sha256', Buffer.concat([authData, sha256(clientData)]), this.#key.privateKey);
    const id = b64url(this.#credentialId);
    return {
      id,
      rawId: id,
      type: 'public-key',
      response: { clientDataJSON: b64url(clientData), authenticatorData: b64url(authData), signature: b64url(signature), ...(this.#userHandle ? { userHandle: this.#userHandle } : {}) },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    };
  }
}
