/**
 * The documentation site `npm run docs` builds (TypeDoc: the README as its index, the guides of
 * docs/ as project documents, the API reference): it builds without a warning (warnings are
 * errors), every link inside it leads somewhere, and a reader on the index page reaches each
 * guide in one click, in a real browser (Debian's chromium driven by playwright-core).
 *
 * The site is built once for this file, into a temporary folder; a docs/api newer than every
 * input (README, guides, lib/, typedoc.json) is reused instead, as `npm run docs` left it.
 */
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { execFile } from 'node:child_process';
import { inflateSync } from 'node:zlib';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../support/browser.js';
import { CHROMIUM_PATH, chromiumAvailable, itWithService } from '../support/services.js';

const ROOT = join(import.meta.dirname, '../..');
const GUIDES = readdirSync(join(ROOT, 'docs'))
  .filter((name) => name.endsWith('.md'))
  .sort();

/** Every file under a folder, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name)) : [join(dir, entry.name)],
  );
}

/** Last change of anything the site is built from. */
function newestInput(): number {
  const inputs = [
    'README.md',
    'typedoc.json',
    'tsconfig.build.json',
    'scripts/typedoc-plugin.mjs',
    'sample-app/README.md',
    ...GUIDES.map((g) => `docs/${g}`),
    ...filesUnder(join(ROOT, 'lib')).map((f) => relative(ROOT, f)),
  ];
  return Math.max(...inputs.map((file) => statSync(join(ROOT, file)).mtimeMs));
}

/** The site's folder: docs/api when it is newer than every input, else a fresh build. */
async function buildSite(): Promise<{ dir: string; temporary: boolean }> {
  const built = join(ROOT, 'docs/api/index.html');
  if (existsSync(built) && statSync(built).mtimeMs > newestInput()) return { dir: dirname(built), temporary: false };
  const dir = mkdtempSync(join(tmpdir(), 'nestjs-payments-docs-'));
  // The options of `npm run docs` (typedoc.json), treatWarningsAsErrors included; only `out` differs.
  await promisify(execFile)(process.execPath, [join(ROOT, 'node_modules/typedoc/bin/typedoc'), '--out', dir], {
    cwd: ROOT,
    timeout: 150_000,
  });
  return { dir, temporary: true };
}

/** The `# Title` of a guide. */
function titleOf(guide: string): string {
  const title = /^# (.+)$/m.exec(readFileSync(join(ROOT, 'docs', guide), 'utf8'))?.[1];
  if (title === undefined) throw new Error(`docs/${guide} has no # title`);
  return title;
}

/** The HTML pages of the site: the index, the guides, the API reference. */
function pagesOf(dir: string): string[] {
  return filesUnder(dir).filter((file) => file.endsWith('.html'));
}

let site: { dir: string; temporary: boolean };
const available = await chromiumAvailable();
// Chromium's start and thirteen page loads, on a shared machine.
jest.setTimeout(60_000);

beforeAll(async () => {
  site = await buildSite();
}, 180_000);

afterAll(() => {
  if (site?.temporary) rmSync(site.dir, { recursive: true, force: true });
});

describe('the documentation site', () => {
  it('has the README as its index page and one page per guide', () => {
    const index = readFileSync(join(site.dir, 'index.html'), 'utf8');
    expect(index).toContain('id="quick-start-nest"');
    expect(index).toContain('id="quick-start-express"');
    // The guides, and the sample shop's README as a page of its own (not a raw .md file).
    expect(readdirSync(join(site.dir, 'documents')).sort()).toEqual(
      [...GUIDES.map((g) => g.replace(/\.md$/, '.html')), 'sample-app.html'].sort(),
    );
    for (const guide of GUIDES) expect(index).toContain(`href="documents/${guide.replace(/\.md$/, '.html')}"`);
    expect(index).toContain('href="documents/sample-app.html"');
    expect(index).not.toMatch(/href="[^"]*README[^"]*\.md"/);
  });

  it('lists the guides by their titles and the entry points by the subpaths users import, and hides [inspect.custom]', () => {
    // The navigation TypeDoc renders from assets/navigation.js (base64 of deflated JSON).
    const script = readFileSync(join(site.dir, 'assets/navigation.js'), 'utf8');
    const nav = JSON.parse(inflateSync(Buffer.from(/"([^"]+)"/.exec(script)![1], 'base64')).toString()) as Array<{
      text: string;
    }>;
    const names = nav.map((entry) => entry.text);
    expect(names).toEqual(expect.arrayContaining([...GUIDES.map(titleOf), 'Sample shop']));
    expect(names.filter((name) => name.startsWith('nestjs-payments')).sort()).toEqual(
      [
        'nestjs-payments',
        'nestjs-payments/desk',
        'nestjs-payments/express',
        'nestjs-payments/medusa',
        'nestjs-payments/postgres',
        'nestjs-payments/redis',
        'nestjs-payments/store',
        'nestjs-payments/terminus',
        'nestjs-payments/testing',
        'nestjs-payments/vendure',
      ].sort(),
    );
    expect(names).not.toContain('index');
    const withCustom = pagesOf(site.dir).filter((page) => readFileSync(page, 'utf8').includes('[custom]'));
    expect(withCustom.map((page) => relative(site.dir, page))).toEqual([]);
  });

  it('has no broken link: every relative link names a file of the site, and every #anchor an id on that page', () => {
    const broken: string[] = [];
    const ids = new Map<string, Set<string>>();
    const idsOf = (file: string): Set<string> => {
      if (!ids.has(file))
        ids.set(file, new Set([...readFileSync(file, 'utf8').matchAll(/\sid="([^"]+)"/g)].map((m) => m[1])));
      return ids.get(file)!;
    };
    for (const page of pagesOf(site.dir)) {
      const html = readFileSync(page, 'utf8');
      for (const [, href] of html.matchAll(/\shref="([^"]*)"/g)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('//')) continue;
        const [path, anchor] = href.split('#') as [string, string | undefined];
        const target = path === '' ? page : resolve(dirname(page), decodeURIComponent(path));
        const file = existsSync(target) && statSync(target).isDirectory() ? join(target, 'index.html') : target;
        if (!existsSync(file)) broken.push(`${relative(site.dir, page)}: ${href} (no such file)`);
        else if (anchor && file.endsWith('.html') && !idsOf(file).has(decodeURIComponent(anchor)))
          broken.push(`${relative(site.dir, page)}: ${href} (no such anchor)`);
      }
    }
    expect(broken).toEqual([]);
  });

  itWithService(available, `chromium not installed at ${CHROMIUM_PATH}`)(
    'takes a reader from the index to each guide in one click, in a browser',
    async () => {
      let browser: Browser | undefined;
      try {
        browser = await launchChromium();
        const page = await browser.newPage();
        const index = pathToFileURL(join(site.dir, 'index.html')).href;
        const reached: string[] = [];
        for (const guide of GUIDES) {
          await page.goto(index);
          const name = guide.replace(/\.md$/, '.html');
          // The link in the README's text (the index page's content), not the site's navigation.
          const link = page.locator(`.col-content a[href="documents/${name}"]`).first();
          await Promise.all([page.waitForURL(`**/documents/${name}`), link.click()]);
          expect(fileURLToPath(page.url())).toBe(join(site.dir, 'documents', name));
          expect((await page.locator('.col-content h1').first().innerText()).trim()).toBe(titleOf(guide));
          reached.push(guide);
        }
        expect(reached).toEqual(GUIDES);
      } finally {
        await browser?.close();
      }
    },
  );
});
