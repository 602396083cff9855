/**
 * Run before the tests (`npm test`'s pretest): the browser tests drive Debian's Chromium. If it
 * is missing, install it when we can (as root, with apt); otherwise stop with the one command
 * to run. No test tool ever downloads a browser of its own.
 */
import { execSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export const CHROMIUM = '/usr/bin/chromium';

if (!existsSync(CHROMIUM)) {
  if (process.getuid?.() === 0) {
    console.log('Chromium is missing: installing Debian\'s chromium package with apt-get…');
    execSync('apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium', { stdio: 'inherit' });
  } else {
    console.error('The browser tests need Debian\'s Chromium. Install it with:\n\n  sudo apt-get install -y chromium\n');
    process.exit(1);
  }
}
