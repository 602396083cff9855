/**
 * Signing in on a device (RFC 8628) in a real browser: Debian's Chromium, driven by
 * playwright-core, follows the link a command line prints, signs in, checks the code and allows;
 * the command line (openid-client) then collects its tokens.
 */
import * as client from 'openid-client';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEVICE_CODE_GRANT } from '../../shared/index.ts';
import { OidcRepository } from '../../server/oidc/repository.ts';
import { launchBrowser } from '../helpers/browser.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';
import { checkPage } from '../web/helpers.ts';
import { approvedRegistrationToken, registerByHttp, relyingParty } from './helpers.ts';

/** A browser walk, then the device's first poll, which openid-client sends after the 5 s interval. */
const LONG = 60_000;

let server: TestServer;
let browser: Browser;
let config: client.Configuration;
let person: { id: string; email: string };

beforeAll(async () => {
  server = await startServer();
  const registered = await registerByHttp(server, await approvedRegistrationToken(server), {
    client_name: 'Review Terminal',
    application_type: 'native',
    token_endpoint_auth_method: 'none',
    grant_types: [DEVICE_CODE_GRANT],
  });
  config = await relyingParty(server, registered.body.client_id);
  person = await createActiveUser(server, { fullname: 'Katherine Johnson' });
  browser = await launchBrowser();
}, LONG);
afterAll(async () => {
  await browser?.close();
  await server.close();
});

describe('the device page in a real browser', () => {
  it('signs in, shows the code and what is asked, and "Allow" signs the device in', async () => {
    const codes = await client.initiateDeviceAuthorization(config, { scope: 'openid profile' });
    // No JavaScript: the page works without it.
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    await page.goto(codes.verification_uri_complete as string);

    await expect.poll(() => page.title()).toBe('Sign in');
    await page.getByLabel('Email').fill(person.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();

    // Back on the device page, the code filled in from the link.
    await expect.poll(() => page.title()).toBe('Sign in on a device');
    expect(await page.getByLabel('Code').inputValue()).toBe(codes.user_code);
    await page.getByRole('button', { name: 'Continue' }).click();

    await expect.poll(() => page.title()).toBe('Review Terminal wants to sign you in');
    expect(await page.getByText(codes.user_code, { exact: true }).count()).toBe(1);
    expect(await page.getByText('See your name').count()).toBe(1);
    await page.getByRole('button', { name: 'Allow' }).click();

    await expect.poll(() => page.getByText('go back to your device', { exact: false }).count()).toBe(1);
    const tokens = await client.pollDeviceAuthorizationGrant(config, codes);
    expect(tokens.claims()?.sub).toBe(person.id);
    await context.close();
  }, LONG);

  it('says so, on the field, when a code is wrong; "Deny" leaves the device signed out; each page passes axe', async () => {
    const codes = await client.initiateDeviceAuthorization(config, { scope: 'openid profile' });
    // Scripts on, and the pages' policy set aside, for axe's script alone.
    const context = await browser.newContext({ bypassCSP: true });
    const page = await context.newPage();
    await page.goto(codes.verification_uri);
    await page.getByLabel('Email').fill(person.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect.poll(() => page.title()).toBe('Sign in on a device');
    await checkPage(page, 'device-code');

    await page.getByLabel('Code').fill('BCDF-GHJK');
    await page.getByRole('button', { name: 'Continue' }).click();
    await expect.poll(() => page.title()).toContain('Sign in on a device');
    expect(await page.locator('#userCode-error').textContent()).toContain('That code is not one a device is waiting with');
    await checkPage(page, 'device-wrong-code');

    await page.getByLabel('Code').fill(codes.user_code);
    await page.getByRole('button', { name: 'Continue' }).click();
    await expect.poll(() => page.title()).toBe('Review Terminal wants to sign you in');
    await checkPage(page, 'device-confirm');
    await page.getByRole('button', { name: 'Deny' }).click();
    await expect.poll(() => page.getByText('The device was not signed in').count()).toBe(1);
    await expect(client.pollDeviceAuthorizationGrant(config, codes)).rejects.toMatchObject({ error: 'access_denied' });
    await context.close();
  }, LONG);

  it('"Register an application" registers a command line: no address to come back to, the device grant, no secret', async () => {
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    await page.goto(`${server.url}/account/login?next=${encodeURIComponent('/account/security/apps')}`);
    await page.getByLabel('Email').fill(person.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByLabel('Name, as people will see it').waitFor();
    await page.getByLabel('Name, as people will see it').fill('Bibliography Sync');
    await page.getByLabel('A command line, or a device without a browser').check();
    await page.getByRole('button', { name: 'Register the application' }).click();
    await page.getByRole('heading', { name: 'Your application is registered' }).waitFor();
    const text = (await page.locator('main').textContent()) ?? '';
    const clientId = /Its client id: (\S+)/.exec(text)?.[1] ?? '';
    expect(text).toContain('/oidc/device/auth');
    expect(text).not.toContain('client secret');
    const row = await new OidcRepository(server.service.db).findClient(clientId);
    expect({ status: row?.status, grantTypes: row?.grantTypes, redirectUris: row?.redirectUris, authMethod: row?.authMethod }).toEqual({
      status: 'pending',
      grantTypes: [DEVICE_CODE_GRANT],
      redirectUris: [],
      authMethod: 'none',
    });
    // Approved by an operator, it asks for codes.
    await server.service.db('oidc_clients').where({ id: clientId }).update({ status: 'approved' });
    const codes = await client.initiateDeviceAuthorization(await relyingParty(server, clientId), { scope: 'openid' });
    expect(codes.user_code).toMatch(/^[A-Z]{4}-[A-Z]{4}$/);
    await context.close();
  }, LONG);
});
