/**
 * Row 10's peer: node-oidc-provider 9 configured as our provider is for the bench's client: one
 * public client (`token_endpoint_auth_method: none`, the bench's client id and redirect URI),
 * PKCE S256 required, scopes openid, profile and email with the same claims (name, email,
 * email_verified, in the ID token too, as ours puts them there), RS256 ID tokens from a 2048-bit
 * key, the endpoints at our paths (`/oidc/authorize`, `/oidc/token`, `/oidc/userinfo`,
 * `/oidc/jwks`, `/.well-known/openid-configuration`) and its default in-memory adapter.
 *
 * A second client, `OFFLINE_CLIENT_ID`, is registered for refresh tokens (rotated at each use,
 * node-oidc-provider's default for public clients), as ours is for row 10e.
 *
 * Login and consent are scripted: `GET /interaction/<uid>` signs the fixed account in, or grants
 * the scopes asked for, at once, and sends the browser back to the provider. The bench walks
 * them once (so a session cookie and a grant exist) and then times what our row times: an
 * authorization request with that session, answered with a code, and the token request.
 *
 * Usage: node test/bench/baselines/oidc-provider.ts
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import Provider from 'oidc-provider';
import { CLIENT_ID, OFFLINE_CLIENT_ID, REDIRECT_URI } from '../setup.ts';
import { listen } from './listen.ts';

const ACCOUNT = '~Bench_Signer1';
const CLAIMS = { name: 'Bench Signer', email: 'bench.signer@bench.example', email_verified: true };

let provider: Provider | undefined;
let handle: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;

/** The scripted login and consent: what a person clicking through the pages would submit. */
async function interaction(p: Provider, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const details = await p.interactionDetails(req, res);
  if (details.prompt.name === 'login') {
    await p.interactionFinished(req, res, { login: { accountId: ACCOUNT } }, { mergeWithLastSubmission: false });
    return;
  }
  const accountId = details.session?.accountId ?? ACCOUNT;
  const clientId = String(details.params.client_id ?? CLIENT_ID);
  const grant = (details.grantId ? await p.Grant.find(details.grantId) : undefined) ?? new p.Grant({ accountId, clientId });
  grant.addOIDCScope(String(details.params.scope ?? 'openid'));
  const grantId = await grant.save();
  await p.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

const server = createServer((req, res) => {
  if (!provider || !handle) {
    res.statusCode = 503;
    res.end();
    return;
  }
  if (req.url?.startsWith('/interaction/')) {
    interaction(provider, req, res).catch((error: unknown) => {
      res.statusCode = 500;
      res.end(String(error));
    });
    return;
  }
  handle(req, res);
});

listen(server, (issuer) => {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  provider = new Provider(issuer, {
    clients: [
      {
        client_id: CLIENT_ID,
        client_name: 'Bench App',
        token_endpoint_auth_method: 'none',
        redirect_uris: [REDIRECT_URI],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        scope: 'openid profile email',
      },
      {
        client_id: OFFLINE_CLIENT_ID,
        client_name: 'Bench Offline App',
        token_endpoint_auth_method: 'none',
        redirect_uris: [REDIRECT_URI],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        scope: 'openid profile email offline_access',
      },
    ],
    jwks: { keys: [{ ...privateKey.export({ format: 'jwk' }), kid: 'bench', alg: 'RS256', use: 'sig' }] },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    pkce: { required: () => true },
    scopes: ['openid', 'offline_access'],
    claims: { openid: ['sub'], profile: ['name'], email: ['email', 'email_verified'] },
    // Ours puts the consented claims in the ID token as well as behind userinfo.
    conformIdTokenClaims: false,
    findAccount: (_ctx: unknown, sub: string) => ({ accountId: sub, claims: () => ({ sub, ...CLAIMS }) }),
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    features: { devInteractions: { enabled: false }, userinfo: { enabled: true } },
    routes: { authorization: '/oidc/authorize', token: '/oidc/token', userinfo: '/oidc/userinfo', jwks: '/oidc/jwks' },
  });
  handle = provider.callback();
});
