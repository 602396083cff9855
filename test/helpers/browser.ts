import { chromium, type Browser } from 'playwright-core';

/** Debian's Chromium, headless; never a browser a test tool downloads. */
const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];

/** `hosts`: names the browser resolves to 127.0.0.1 (a test's sites on one machine). */
export function launchBrowser(opts: { hosts?: readonly string[] } = {}): Promise<Browser> {
  const resolve = opts.hosts?.length ? [`--host-resolver-rules=${opts.hosts.map((host) => `MAP ${host} 127.0.0.1`).join(', ')}`] : [];
  return chromium.launch({ executablePath: '/usr/bin/chromium', args: [...CHROMIUM_FLAGS, ...resolve] });
}
