/**
 * Reading a passkey answer out of a form, for every page that has a passkey button (the account
 * pages and the sign-in provider's): the browser script puts the WebAuthn answer in a hidden
 * field as JSON text.
 */
import { AppError, PasskeyLoginInput } from '../../shared/index.ts';

/** A form field's JSON text, parsed; what cannot be read is `''`, which the schema reading it refuses. */
export function jsonFieldValue(text: string | undefined): unknown {
  try {
    return JSON.parse(text ?? '') as unknown;
  } catch {
    return '';
  }
}

/** The passkey sign-in form's fields as `POST /login/passkey`'s input, or a 400 that says the answer could not be read. */
export function passkeyFormInput(challengeId: string | undefined, response: string | undefined): PasskeyLoginInput {
  const input = PasskeyLoginInput.safeParse({ challengeId, response: jsonFieldValue(response) });
  if (!input.success) throw new AppError('ValidationError', 'The passkey answer could not be read. Please try again.');
  return input.data;
}
