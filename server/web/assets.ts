/**
 * The pages' stylesheets and their one script, as files beside this module (`assets/`), read once
 * at start. Each is served under a name that carries its content's hash
 * (`/assets/pages.<hash>.css`) and cached for a year: a changed file is a new name, so a browser
 * never runs an old script against a new page. The pages' CSP allows only our own origin for
 * both (`style-src 'self'`, `script-src 'self'` on pages with passkey buttons). The names
 * without a hash (`/account/pages.css`, `/oidc/pages.css`, `/webauthn/passkey.js`) still answer,
 * with a short cache, for anything that linked them before.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { RequestHandler } from 'express';
import { keptText, sendKeptText, type KeptText } from '../etag.ts';
import { fromRoot } from '../root.ts';

const DIR = fromRoot('server', 'web', 'assets');

/** With its ETag: a browser past the short cache of an old name asks again with it and gets a 304. */
export interface Asset extends KeptText {
  /** Where a page links it: the name with the content's hash. */
  url: string;
}

function asset(name: string, type: 'css' | 'js', body: string): Asset {
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 16);
  return { url: `/assets/${name}.${hash}.${type}`, ...keptText(body, type) };
}

const read = (file: string) => readFileSync(path.join(DIR, file), 'utf8');

/**
 * The account pages' small behaviours (`assets/behaviours/*.js`, one file each: the show-password
 * toggle, local times, copying recovery codes, …) as one script every account page loads. Each
 * file acts on the elements that ask for it by a `data-` attribute and does nothing elsewhere;
 * every page reads and works without it.
 */
function behaviours(): string {
  const folder = path.join(DIR, 'behaviours');
  const files = readdirSync(folder).filter((name) => name.endsWith('.js')).sort();
  // Each in its own block: one behaviour that throws (an option an older browser lacks) leaves
  // the others working.
  return files.map((name) => `// ${name}\ntry {\n${readFileSync(path.join(folder, name), 'utf8')}\n} catch (error) {\n  console.error('${name}', error);\n}`).join('\n');
}
const providerCss = read('provider.css');

export const ASSETS = {
  /** The sign-in provider's look, which the account pages share. */
  providerCss: asset('provider', 'css', providerCss),
  /** The account pages' stylesheet: the provider's, and what these pages add (a header, wider pages, fieldsets, cards, tables). */
  pagesCss: asset('pages', 'css', `${providerCss}${read('account.css')}`),
  /** The page comparing two revisions of a note's PDF (`GET /pdf/compare/view`). */
  compareCss: asset('compare', 'css', read('compare.css')),
  /** The passkey buttons of the sign-in and security pages, and the Python client's passkey page. */
  passkeyJs: asset('passkey', 'js', read('passkey.js')),
  /** The account pages' behaviours (`behaviours()`), on every account page. */
  pagesJs: asset('pages', 'js', behaviours()),
} as const;

const BY_URL = new Map<string, Asset>(Object.values(ASSETS).map((a) => [a.url, a]));

/** `GET /assets/:file`: an asset by its hashed name, cached for a year; any other name is the service's 404. */
export const serveAsset: RequestHandler = (req, res, next) => {
  const found = BY_URL.get(`/assets/${String(req.params.file ?? '')}`);
  if (!found) {
    next();
    return;
  }
  sendKeptText(req, res.setHeader('Cache-Control', 'public, max-age=31536000, immutable'), found);
};

/** An asset under its old name, without a hash: an hour's cache. */
export function serveUnhashed(found: Asset): RequestHandler {
  return (req, res) => {
    sendKeptText(req, res.setHeader('Cache-Control', 'public, max-age=3600'), found);
  };
}
