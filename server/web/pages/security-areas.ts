/**
 * The areas of "Password & security" and how one is drawn: its path, what its page shows (read
 * through the procedures the REST paths call) and its template. Shared by the area's own forms
 * (`security.ts`) and the two-step and passkey forms (`security-two-step.ts`).
 */
import type { Request, Response } from 'express';
import { PAGES_PREFIX } from '../../config.ts';
import { scopeWords } from '../../oidc/interactions.ts';
import { iso, sendPage, when, type FieldError } from '../render.ts';
import { frame, type SignedInPage } from './kit.ts';
import { METHOD_WORDS } from './second-step.ts';
import { eventFrom, eventWords, signInWords } from './security-activity.ts';

/** The areas of "Password & security", in order: each a page at `/account/security/<id>` whose body is `templates/security/<id>.eta`. */
export const SECURITY_AREAS = [
  { id: 'password', title: 'Password' },
  { id: 'two-step', title: 'Two-step verification' },
  { id: 'passkeys', title: 'Passkeys' },
  { id: 'sessions', title: 'Sessions and devices' },
  { id: 'apps', title: 'Applications' },
  { id: 'activity', title: 'Activity' },
] as const;
export type SecurityArea = (typeof SECURITY_AREAS)[number]['id'];

/** Where an area's page is. */
export function areaPath(area: SecurityArea): string {
  return `${PAGES_PREFIX}/security/${area}`;
}

/** What every security template may read besides its own data: how to write times and methods. */
export const WORDS = {
  when,
  iso,
  methodWords: (m: string) => METHOD_WORDS[m] ?? m,
  signInWords,
  eventWords,
  eventFrom,
  scopeWords,
};

/** What an area's page shows, read through the procedures the REST paths call. */
async function areaData(req: Request, page: SignedInPage, area: SecurityArea): Promise<Record<string, unknown>> {
  switch (area) {
    case 'password':
      return {};
    case 'two-step':
      return { mfa: await page.caller.accounts.mfa.status() };
    case 'passkeys': {
      const [mfa, { passkeys }] = await Promise.all([page.caller.accounts.mfa.status(), page.caller.accounts.mfa.passkeys()]);
      return { mfa, passkeys };
    }
    case 'sessions':
      return { sessions: (await page.caller.accounts.sessions()).sessions };
    case 'apps':
      return { consents: (await page.caller.oidc.consents()).consents };
    case 'activity': {
      const before = Number(typeof req.query.before === 'string' ? req.query.before : Number.NaN);
      const { events, older } = await page.caller.accounts.securityEvents(Number.isSafeInteger(before) && before > 0 ? { before } : {});
      return { events, older: older ?? null, paged: Number.isSafeInteger(before) && before > 0 };
    }
  }
}

/**
 * Renders an area's page (`templates/security/area.eta`, which includes the area's own
 * template); `errors` and `values` for a refused form shown again.
 */
export async function areaPage(req: Request, res: Response, page: SignedInPage, area: SecurityArea, status = 200, errors?: FieldError[], values: Record<string, string> = {}): Promise<void> {
  const title = SECURITY_AREAS.find((a) => a.id === area)?.title ?? 'Password & security';
  sendPage(
    res,
    status,
    'security/area',
    { ...frame(req, page, title, { errors, wide: true }), ...WORDS, area, areaTitle: title, areas: SECURITY_AREAS, values, ...(await areaData(req, page, area)) },
    // Only the passkeys page runs the passkey ceremony, which calls the API from its script.
    { passkeys: area === 'passkeys' },
  );
}
