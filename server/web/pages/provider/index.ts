/**
 * The pages a person sees while signing in to another application through our OpenID Connect
 * provider, one file per flow: the login page with its second step (`login.ts`), the consent
 * page (`consent.ts`) and signing out (`sign-out.ts`); what they share is `kit.ts`, their HTML
 * `views.ts` (templates in `server/web/templates/oidc/`). The interaction itself (which
 * request, its client, where it goes after the sign-in or the consent) is the protocol's, and
 * so `OidcService`'s, as the protocol endpoints in `server/http/oidc.ts` are: these handlers
 * move forms on and off the wire and sign in through the procedures.
 */
import type { RequestHandler } from 'express';
import type { Config } from '../../../config.ts';
import type { Services } from '../../../services.ts';
import { providerConsentPages } from './consent.ts';
import { providerKit } from './kit.ts';
import { providerLoginPages } from './login.ts';
import { providerSignOutPages } from './sign-out.ts';

export function providerPages(services: Services, config: Config) {
  const kit = providerKit(services, config);
  return { ...providerLoginPages(kit), ...providerConsentPages(kit), ...providerSignOutPages(kit) } satisfies Record<string, RequestHandler>;
}

export type ProviderPageHandlers = ReturnType<typeof providerPages>;
