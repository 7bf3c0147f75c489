import { chromium, type Browser } from 'playwright-core';
import { CHROMIUM_PATH } from './services.js';

/**
 * Debian's chromium through playwright-core (a downloaded browser cannot be installed here),
 * headless and with nothing that reaches the network on its own.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-quic',
      '--no-first-run',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
