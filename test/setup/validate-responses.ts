/**
 * Every answer a test's `fetch` gets from a service the tests started (`startServer`) is checked against the API
 * document (see `test/helpers/api-document.ts`): a test that gets an undocumented status, or a
 * body the document does not describe, fails with the reason, whatever it was testing.
 */
import { serviceOrigins } from '../helpers/service-origins.ts';

const original = globalThis.fetch;

async function checkedFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  const response = await original(input, init);
  const url = new URL(input instanceof Request ? input.url : String(input));
  if (!serviceOrigins.has(url.origin)) return response;
  const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
  const contentType = response.headers.get('content-type') ?? '';
  // Only JSON is read (from a copy); files are streamed to the test untouched.
  const text = /^application\/json\b/.test(contentType) ? await response.clone().text() : undefined;
  // Loaded on the first answer to check: a test that starts no service never builds the document.
  const { problemsOf } = await import('../helpers/api-document.ts');
  const problems = problemsOf({ method: method.toUpperCase(), path: url.pathname, status: response.status, contentType, text, allowOrigin: response.headers.get('access-control-allow-origin') });
  if (problems.length > 0) throw new Error(`The answer does not match the API document:\n${problems.join('\n')}`);
  return response;
}

globalThis.fetch = checkedFetch as typeof fetch;
