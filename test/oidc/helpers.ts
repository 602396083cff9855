import { execFile } from 'node:child_process';
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import * as client from 'openid-client';
import { cookieHeader, keepCookies } from '../helpers/cookies.ts';
import type { TestServer } from '../helpers/server.ts';
import { childEnv } from '../helpers/server.ts';
import { publicClientRecord } from '../../server/oidc/clients.ts';
import { OidcRepository } from '../../server/oidc/repository.ts';

const run = promisify(execFile);

/** `npm run admin -- …` against the server's data folder, as an operator would run it. */
export async function admin(server: TestServer, ...args: string[]): Promise<string> {
  const env = await childEnv({ DATA_DIR: server.dataDir, OIDC_KEY_ACTIVATION_SECONDS: String(server.config.oidcKeyActivationSeconds) });
  const { stdout } = await run(process.execPath, ['server/cli/admin.ts', ...args], { env });
  return stdout;
}

export const REDIRECT = 'http://127.0.0.1:9/callback';

/** An approved public client that may ask for refresh tokens (`offline_access` on the consent page). */
export async function addOfflineClient(server: TestServer, id: string): Promise<void> {
  await new OidcRepository(server.service.db).insertClient({
    ...publicClientRecord({ id, name: 'Offline App', redirectUris: [REDIRECT], scopes: ['openid', 'offline_access'] }, Date.now()),
    status: 'approved',
    grantTypes: ['authorization_code', 'refresh_token'],
  });
}

/** Registers and approves a client through the admin command line. */
export async function registerClient(server: TestServer, id: string, opts: { scopes?: string; approve?: boolean; redirect?: string; name?: string } = {}) {
  await admin(server, 'oidc-client', 'add', '--id', id, '--name', opts.name ?? `App ${id}`, '--redirect-uri', opts.redirect ?? REDIRECT, '--scopes', opts.scopes ?? 'openid profile email');
  if (opts.approve !== false) await admin(server, 'oidc-client', 'approve', id);
}

/** A one-use initial access token from `npm run admin -- oidc-client registration-token`, as an operator makes one. */
export async function registrationToken(server: TestServer, ...flags: string[]): Promise<string> {
  const lines = (await admin(server, 'oidc-client', 'registration-token', ...flags)).trim().split('\n');
  return lines.at(-1) ?? '';
}

/**
 * The same token made by the service the command calls (`OidcService.issueRegistrationToken`),
 * without starting a process: for tests about what a client does once registered. The command
 * itself is tested in `registration.test.ts`.
 */
export async function approvedRegistrationToken(server: TestServer): Promise<string> {
  return (await server.service.services.oidc.issueRegistrationToken({ approved: true, expiresInSeconds: 3600 })).token;
}

/** `POST /oidc/register` (RFC 7591) with `token` as the bearer: the status and the JSON answer. */
export async function registerByHttp(server: TestServer, token: string | undefined, metadata: Record<string, unknown>) {
  const res = await fetch(`${server.url}/oidc/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(metadata),
  });
  return { status: res.status, headers: res.headers, body: (await res.json().catch(() => null)) as Record<string, unknown> & { client_id: string; client_secret?: string; registration_access_token: string; registration_client_uri: string } };
}

/** `POST /oidc/token` at `server` redeeming a code of a public client (`REDIRECT`, PKCE): the status and the JSON answer. */
export async function redeemCode(server: { url: string }, clientId: string, code: string, verifier: string) {
  const res = await fetch(`${server.url}/oidc/token`, {
    method: 'POST',
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: clientId, code_verifier: verifier }),
  });
  return { status: res.status, body: (await res.json()) as { access_token?: string; id_token?: string; refresh_token?: string; error?: string; error_description?: string } };
}

/** The relying party: openid-client with discovery, signature checks on, plain http allowed for the test. */
export async function relyingParty(server: TestServer, clientId: string): Promise<client.Configuration> {
  const config = await client.discovery(new URL(server.url), clientId, undefined, client.None(), { execute: [client.allowInsecureRequests] });
  client.enableNonRepudiationChecks(config);
  return config;
}

/** An authorization request with PKCE, state and nonce, and what to check the answer with. */
export async function authorizationRequest(config: client.Configuration, extra: Record<string, string> = {}) {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT,
    scope: 'openid profile email',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    nonce,
    ...extra,
  });
  return { url, verifier, state, nonce };
}

interface Page {
  status: number;
  url: string;
  location: string | null;
  html: string;
}

/**
 * A browser stand-in for the tests that do not need a real one: it keeps cookies, follows
 * redirects inside the service, stops at the client's redirect URI, and fills the login and
 * consent forms the way a person would.
 */
export class UserAgent {
  readonly jar = new Map<string, string>();

  async #request(url: string, init: RequestInit = {}): Promise<Page> {
    const headers = new Headers(init.headers);
    if (this.jar.size > 0) headers.set('cookie', cookieHeader(this.jar));
    const res = await fetch(url, { ...init, headers, redirect: 'manual' });
    keepCookies(this.jar, res);
    const location = res.headers.get('location');
    return { status: res.status, url, location: location ? new URL(location, url).toString() : null, html: await res.text() };
  }

  /** Follows redirects until a page is shown or the browser is sent to the client. */
  async go(url: string, init?: RequestInit): Promise<Page> {
    let page = await this.#request(url, init);
    while (page.location && !page.location.startsWith(REDIRECT)) page = await this.#request(page.location);
    return page;
  }

  /**
   * Submits a form of the page shown (the first, or the one posting to `action`), with its hidden
   * fields and `fields`.
   */
  async submit(page: Page, fields: Record<string, string>, action?: string): Promise<Page> {
    const forms = [...page.html.matchAll(/<form method="post" action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/g)];
    const form = action === undefined ? forms[0] : forms.find((f) => f[1] === action);
    if (!form?.[1]) throw new Error(`no form${action ? ` posting to ${action}` : ''} on the page: ${page.html.slice(0, 300)}`);
    const body = new URLSearchParams();
    for (const match of (form[2] ?? '').matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) body.set(match[1] ?? '', match[2] ?? '');
    for (const [k, v] of Object.entries(fields)) body.set(k, v);
    return this.go(new URL(form[1], page.url).toString(), { method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  }

  /** Signs in if asked to, consents if asked to, and returns where the browser ends up. */
  async authorize(url: URL | string, person?: { email: string; password: string }, decision: 'allow' | 'deny' = 'allow'): Promise<Page> {
    let page = await this.go(url.toString());
    for (let step = 0; step < 4 && !page.location; step += 1) {
      if (page.html.includes('action="/oidc/login"')) {
        if (!person) return page;
        page = await this.submit(page, { email: person.email, password: person.password });
      } else if (page.html.includes('action="/oidc/consent"')) {
        page = await this.submit(page, { decision });
      } else {
        return page;
      }
    }
    return page;
  }
}

/** An application's back-channel logout endpoint: every logout token it is sent, by the path it was sent to. */
export interface LogoutReceiver {
  url: string;
  received: Map<string, string[]>;
  close(): Promise<void>;
}

/** Starts a back-channel logout receiver on 127.0.0.1 (port 0) that answers every POST 200. */
export async function startLogoutReceiver(): Promise<LogoutReceiver> {
  const received = new Map<string, string[]>();
  const server = createHttpServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      const path = req.url ?? '';
      received.set(path, [...(received.get(path) ?? []), new URLSearchParams(body).get('logout_token') ?? '']);
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, received, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
