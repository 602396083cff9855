/**
 * `GET /openapi.json` (the API document) and `GET /docs` (Swagger UI rendering it). The viewer's
 * files come from the `swagger-ui-dist` package on disk, never from a CDN: the service must
 * work offline. Only the three files the page needs are served from that package.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import type { RequestHandler } from 'express';
import { PAGES_PREFIX } from '../config.ts';
import { keptText, sendKeptText, type KeptText } from '../etag.ts';
import { installedFile } from './installed-file.ts';

const VIEWER_DIR = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const VIEWER_FILES = ['swagger-ui.css', 'swagger-ui-bundle.js', 'favicon-32x32.png'] as const;

/**
 * The page: a header (a banner landmark) that leads back to the account pages, and Swagger UI,
 * which draws its operations in a `main` of its own (axe-core's WCAG 2.1 A and AA rules pass on
 * it, at desktop and at phone width: `test/web/docs-page-axe.test.ts`).
 */
const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="docs/swagger-ui.css">
<link rel="icon" type="image/png" href="docs/favicon-32x32.png">
</head><body>
<header class="docs-site"><a class="docs-brand" href="${PAGES_PREFIX}/">Peer Review account</a>
<nav aria-label="Site"><a href="${PAGES_PREFIX}/">Your account</a></nav></header>
<div id="swagger-ui"></div>
<script src="docs/swagger-ui-bundle.js"></script>
<script src="docs/init.js"></script>
</body></html>`;

// A file of its own, not an inline script: the Content-Security-Policy allows only our scripts.
// `deepLinking` is off: its links inside each operation's toggle button were controls nested in
// a control (axe's nested-interactive); the syntax highlighting's colours fail contrast on its
// dark background, so examples are plain text. The servers' menu has no label of Swagger UI's
// own: one is given to it whenever it is drawn, and what Swagger UI draws outside its own
// \`main\` (the title, the servers) is named as regions, so that all of the page is in landmarks.
const INIT = `window.ui = SwaggerUIBundle({
  url: new URL('openapi.json', document.baseURI).href,
  dom_id: '#swagger-ui',
  deepLinking: false,
  syntaxHighlight: false,
  presets: [SwaggerUIBundle.presets.apis],
  layout: 'BaseLayout',
  withCredentials: true,
});
const labelControls = () => {
  for (const select of document.querySelectorAll('select#servers:not([aria-label])')) select.setAttribute('aria-label', 'Server');
  // Examples wider than a phone scroll: they take the keyboard's focus, so that they scroll without a mouse.
  for (const pre of document.querySelectorAll('#swagger-ui pre.example:not([tabindex])')) pre.setAttribute('tabindex', '0');
  // Under the document's title (a heading 1) Swagger UI starts at heading 3: every level below is read one up.
  for (const heading of document.querySelectorAll('#swagger-ui :is(h3, h4, h5, h6):not([aria-level])')) heading.setAttribute('aria-level', String(Number(heading.tagName.slice(1)) - 1));
  // Swagger UI draws the operations in a main of its own; what it draws before them is named as regions.
  for (const [selector, name] of [['.information-container', 'About this API'], ['.schemes-server-container', 'Server']]) {
    for (const part of document.querySelectorAll('#swagger-ui ' + selector + ':not([role])')) { part.setAttribute('role', 'region'); part.setAttribute('aria-label', name); }
  }
  for (const select of document.querySelectorAll('select:not([aria-label]):not([aria-labelledby]):not([id])')) select.setAttribute('aria-label', select.closest('[data-param-name]')?.getAttribute('data-param-name') || 'Choice');
};
new MutationObserver(labelControls).observe(document.getElementById('swagger-ui'), { childList: true, subtree: true });
`;

/**
 * What our page changes in Swagger UI's look, after its own stylesheet: colours dark enough for
 * WCAG AA's 4.5:1 (the method badges, version stamps, links, the "Authorize" button), and the
 * header back to the account pages.
 */
const OVERRIDES = `
/* ours (server/http/docs.ts): the header, and colours that meet WCAG AA contrast */
body{margin:0;font-family:system-ui,-apple-system,"Segoe UI",sans-serif}
.docs-site{display:flex;flex-wrap:wrap;gap:12px;justify-content:space-between;align-items:center;max-width:1460px;margin:0 auto;padding:16px 20px}
.docs-site a{color:#1f4fbf}
.docs-site .docs-brand{font-weight:700;text-decoration:none;color:#1d2330}
.swagger-ui .info .title small{background:#4f5663}
.swagger-ui .info .title small.version-stamp{background:#3d6b00}
.swagger-ui .info .title small pre{color:#fff}
.swagger-ui .info a,.swagger-ui .info .url{color:#1f4fbf}
.swagger-ui .btn.authorize{color:#17693f;border-color:#17693f}
.swagger-ui .btn.authorize svg{fill:#17693f}
.swagger-ui .opblock.opblock-post .opblock-summary-method{background:#17693f}
.swagger-ui .opblock.opblock-get .opblock-summary-method{background:#1f5fa8}
.swagger-ui .opblock.opblock-put .opblock-summary-method{background:#8a5000}
.swagger-ui .opblock.opblock-delete .opblock-summary-method{background:#b3261e}
.swagger-ui .opblock.opblock-patch .opblock-summary-method{background:#0f6b58}
.swagger-ui .opblock.opblock-head .opblock-summary-method,.swagger-ui .opblock.opblock-options .opblock-summary-method{background:#5a3e99}
.swagger-ui .json-schema-2020-12-expand-deep-button{color:#3b4151}
.swagger-ui :focus-visible{outline:3px solid #f2b400;outline-offset:2px}
`;

/**
 * The handlers of the `docs` routes. `document` builds the API document's text; it runs at the
 * first request for it, and its text is kept (a process that is never asked for it never builds
 * it: about 0.5 MB of text, and several times that in garbage while the schemas are converted).
 */
export function docsHandlers(document: () => string) {
  // Each text with its ETag, made once; the viewer's files are sent from disk with theirs.
  let text: KeptText | undefined;
  const viewerFile = (file: (typeof VIEWER_FILES)[number]): RequestHandler => installedFile(path.join(VIEWER_DIR, file));
  const apiDocument: RequestHandler = (req, res) => {
    text ??= keptText(document(), 'json');
    sendKeptText(req, res, text);
  };
  const page = keptText(PAGE, 'html');
  const referencePage: RequestHandler = (req, res) => {
    // The page's links are relative to `/docs`: `/docs/` would look for its files in `/docs/docs/`.
    if (req.path.endsWith('/')) return res.redirect(301, '../docs');
    sendKeptText(req, res, page);
  };
  const script = keptText(INIT, 'js');
  const referenceScript: RequestHandler = (req, res) => {
    sendKeptText(req, res, script);
  };
  // Swagger UI's stylesheet with ours after it, read at the first request for it, then kept.
  let css: KeptText | undefined;
  const viewerCss: RequestHandler = (req, res) => {
    css ??= keptText(`${readFileSync(path.join(VIEWER_DIR, 'swagger-ui.css'), 'utf8')}\n${OVERRIDES}`, 'css');
    sendKeptText(req, res.setHeader('Cache-Control', 'public, max-age=86400'), css);
  };
  return {
    apiDocument,
    referencePage,
    referenceScript,
    viewerCss,
    viewerScript: viewerFile('swagger-ui-bundle.js'),
    viewerIcon: viewerFile('favicon-32x32.png'),
  } satisfies Record<string, RequestHandler>;
}

export type DocsHandlers = ReturnType<typeof docsHandlers>;
