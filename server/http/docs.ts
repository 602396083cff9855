/**
 * `GET /openapi.json` (the API document) and `GET /docs` (Swagger UI rendering it). The viewer's
 * files come from the `swagger-ui-dist` package on disk, never from a CDN: the service must
 * work offline. Only the three files the page needs are served from that package.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import type { RequestHandler } from 'express';

const VIEWER_DIR = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const VIEWER_FILES = ['swagger-ui.css', 'swagger-ui-bundle.js', 'favicon-32x32.png'] as const;

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="docs/swagger-ui.css">
<link rel="icon" type="image/png" href="docs/favicon-32x32.png">
</head><body><div id="swagger-ui"></div>
<script src="docs/swagger-ui-bundle.js"></script>
<script src="docs/init.js"></script>
</body></html>`;

// A file of its own, not an inline script: the Content-Security-Policy allows only our scripts.
const INIT = `window.ui = SwaggerUIBundle({
  url: new URL('openapi.json', document.baseURI).href,
  dom_id: '#swagger-ui',
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis],
  layout: 'BaseLayout',
  withCredentials: true,
});
`;

/** The handlers of the `docs` routes; `document` is the API document's text, built once at start-up. */
export function docsHandlers(document: string) {
  const viewerFile =
    (file: (typeof VIEWER_FILES)[number]): RequestHandler =>
    (_req, res) =>
      res.sendFile(path.join(VIEWER_DIR, file), { maxAge: '1d' });
  const apiDocument: RequestHandler = (_req, res) => {
    res.type('json').send(document);
  };
  const referencePage: RequestHandler = (req, res) => {
    // The page's links are relative to `/docs`: `/docs/` would look for its files in `/docs/docs/`.
    if (req.path.endsWith('/')) return res.redirect(301, '../docs');
    res.type('html').send(PAGE);
  };
  const referenceScript: RequestHandler = (_req, res) => {
    res.type('js').send(INIT);
  };
  return {
    apiDocument,
    referencePage,
    referenceScript,
    viewerCss: viewerFile('swagger-ui.css'),
    viewerScript: viewerFile('swagger-ui-bundle.js'),
    viewerIcon: viewerFile('favicon-32x32.png'),
  } satisfies Record<string, RequestHandler>;
}

export type DocsHandlers = ReturnType<typeof docsHandlers>;
