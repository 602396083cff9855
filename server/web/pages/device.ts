/**
 * The device page (RFC 8628's `verification_uri`, `server/oidc/device.ts`): a person signed in
 * types the code a device or a command line shows (or follows its link, the code filled in),
 * sees which application asks for what and the code to compare with the device's, and allows or
 * denies it. The look-up and the answer are the procedures `oidc.deviceRequest` and
 * `oidc.decideDevice`, which count every code typed and take the browser session only.
 */
import type { Request, RequestHandler, Response } from 'express';
import { DeviceCodeInput, type DeviceRequest } from '../../../shared/index.ts';
import { PAGES_PREFIX } from '../../config.ts';
import { formRefusal, type FormField } from '../form-errors.ts';
import { sendPage, type FieldError } from '../render.ts';
import { field, frame, query, redirect, type PageKit, type PageRequest } from './kit.ts';

const DEVICE_FIELDS: FormField[] = [{ id: 'userCode', paths: ['userCode'], what: 'the code your device shows, like BCDF-GHJK', name: 'The code' }];

export function devicePages(kit: PageKit) {
  const { signedIn } = kit;

  const devicePage = (req: Request, res: Response, page: PageRequest, status: number, shown: { values?: { userCode: string }; errors?: FieldError[]; request?: DeviceRequest }) =>
    sendPage(res, status, 'device', {
      ...frame(req, page, shown.request ? `${shown.request.clientName} wants to sign you in` : 'Sign in on a device', { errors: shown.errors }),
      values: shown.values ?? { userCode: '' },
      request: shown.request,
    });

  /** The code form, filled in from `verification_uri_complete`'s `user_code`: the person still sends it, and compares it on the next page. */
  const webDeviceForm = signedIn(async (req, res, page) => {
    devicePage(req, res, page, 200, { values: { userCode: query(req, 'user_code') } });
  });

  /** A code sent: what its device asks, to allow or deny; an answer: back to the form, saying what happened. */
  const webDevice = signedIn(
    async (req, res, page) => {
      const userCode = field(req, 'userCode').trim();
      const decision = field(req, 'decision');
      try {
        if (decision === 'allow' || decision === 'deny') {
          const { approved } = await page.caller.oidc.decideDevice({ userCode, approved: decision === 'allow' });
          redirect(res, `${PAGES_PREFIX}/device`, approved ? 'device-allowed' : 'device-denied');
          return;
        }
        devicePage(req, res, page, 200, { request: await page.caller.oidc.deviceRequest({ userCode }) });
      } catch (error) {
        const refusal = formRefusal(req, error, { fields: DEVICE_FIELDS, schema: DeviceCodeInput, input: { userCode } });
        devicePage(req, res, page, refusal.status, { values: { userCode }, errors: refusal.errors });
      }
    },
    { post: true },
  );

  return { webDeviceForm, webDevice } satisfies Record<string, RequestHandler>;
}
