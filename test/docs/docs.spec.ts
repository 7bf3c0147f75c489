// The README and the guides in docs/ as a reader meets them: a short front door with a table of
// contents, each guide one click away, links and anchors that lead somewhere (on GitHub, by its
// heading anchors; the built site has its own test), real headings, no section written twice, and
// no name of an option, event, error class or environment variable that lib/ does not have.
import { beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { knownNames, unknownNames, type KnownNames } from './names.js';

const ROOT = join(import.meta.dirname, '../..');
const GUIDES = readdirSync(join(ROOT, 'docs'))
  .filter((name) => name.endsWith('.md'))
  .sort()
  .map((name) => `docs/${name}`);
const DOCUMENTS = ['README.md', ...GUIDES];
const read = (file: string): string => readFileSync(join(ROOT, file), 'utf8');
/** A document without its fenced code blocks. */
const prose = (markdown: string): string => markdown.replace(/^```[\s\S]*?^```$/gm, '');

/** The anchors GitHub gives a document's headings. */
function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, heading] of prose(markdown).matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = heading
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** The Markdown links of a document's prose: [text, target]. */
function linksOf(markdown: string): Array<[string, string]> {
  return [...prose(markdown).matchAll(/\[([^\]]+)\]\(([^)\s]+)\)/g)].map((m) => [m[1], m[2]]);
}

describe('README.md', () => {
  const readme = read('README.md');

  it('is at most 15 KB', () => {
    expect(Buffer.byteLength(readme)).toBeLessThanOrEqual(15 * 1024);
  });

  it('shows the two set-up commands (start the shop, run the tests) on its first screen', () => {
    const firstScreen = readme.split('\n').slice(0, 25).join('\n');
    expect(firstScreen).toContain('npm start');
    expect(firstScreen).toContain('npm test');
  });

  it('has a table of contents linking every one of its sections', () => {
    const contents = readme.slice(readme.indexOf('## Contents'));
    const listed = linksOf(contents.slice(0, contents.indexOf('\n## ', 3))).map(([, target]) => target);
    const sections = [...prose(readme).matchAll(/^## (.+)$/gm)].map((m) => m[1]).filter((s) => s !== 'Contents');
    expect(listed).toEqual([...anchorsOf(sections.map((s) => `## ${s}`).join('\n'))].map((a) => `#${a}`));
  });

  it('links every guide in docs/, so each is one click away', () => {
    const targets = new Set(linksOf(readme).map(([, target]) => target.split('#')[0]));
    expect(GUIDES.filter((guide) => !targets.has(guide))).toEqual([]);
  });
});

describe('README.md and the guides', () => {
  it('link only to files that exist, and to anchors of headings that exist', () => {
    const broken: string[] = [];
    for (const file of DOCUMENTS) {
      for (const [text, target] of linksOf(read(file))) {
        if (/^[a-z]+:/i.test(target)) continue;
        const [path, anchor] = target.split('#') as [string, string | undefined];
        const resolved = path === '' ? file : normalize(join(dirname(file), path));
        if (!existsSync(join(ROOT, resolved))) broken.push(`${file}: [${text}](${target}): no file ${resolved}`);
        else if (
          anchor !== undefined &&
          resolved.endsWith('.md') &&
          statSync(join(ROOT, resolved)).isFile() &&
          !anchorsOf(read(resolved)).has(anchor)
        )
          broken.push(`${file}: [${text}](${target}): no heading #${anchor} in ${resolved}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('show pictures that exist, each with a text for who cannot see it, and small (150 KB at most)', () => {
    const wrong: string[] = [];
    for (const file of DOCUMENTS) {
      for (const [, alt, target] of prose(read(file)).matchAll(/!\[([^\]]*)\]\(([^)\s]*)\)/g)) {
        if (/^[a-z]+:/i.test(target)) {
          wrong.push(`${file}: ${target}: a picture from elsewhere, not from the repository`);
          continue;
        }
        const resolved = normalize(join(dirname(file), target));
        if (alt.trim() === '') wrong.push(`${file}: ${target}: no alt text`);
        if (!existsSync(join(ROOT, resolved))) wrong.push(`${file}: ${target}: no file ${resolved}`);
        else if (statSync(join(ROOT, resolved)).size > 150 * 1024) wrong.push(`${file}: ${target}: over 150 KB`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('use real headings, never a bold paragraph opening as a heading', () => {
    const pseudo = DOCUMENTS.flatMap((file) =>
      [...prose(read(file)).matchAll(/(?:^|\n\n)(\*\*[^*\n]+(?:[.:]\*\*|\*\*:|\*\*\n))/g)].map(
        (m) => `${file}: ${m[1].trim()}`,
      ),
    );
    expect(pseudo).toEqual([]);
  });

  it('give every guide one # title', () => {
    for (const guide of GUIDES)
      expect([guide, (prose(read(guide)).match(/^# .+$/gm) ?? []).length]).toEqual([guide, 1]);
  });

  it('write no section twice: no heading and no paragraph appears in two places', () => {
    const headings = new Map<string, string[]>();
    const paragraphs = new Map<string, string[]>();
    for (const file of DOCUMENTS) {
      const text = prose(read(file));
      for (const [, heading] of text.matchAll(/^#{2,6} (.+)$/gm))
        headings.set(heading, [...(headings.get(heading) ?? []), file]);
      for (const paragraph of text.split(/\n\s*\n/)) {
        const normalized = paragraph.replace(/\s+/g, ' ').trim();
        if (normalized.length >= 160 && !normalized.startsWith('|'))
          paragraphs.set(normalized, [...(paragraphs.get(normalized) ?? []), file]);
      }
    }
    const twice = (map: Map<string, string[]>) =>
      [...map]
        .filter(([, files]) => files.length > 1)
        .map(([text, files]) => `${files.join(', ')}: ${text.slice(0, 80)}`);
    expect(twice(headings)).toEqual([]);
    expect(twice(paragraphs)).toEqual([]);
  });

  it('keep "Operations in production" in one place, docs/operations.md', () => {
    const titled = DOCUMENTS.filter((file) => /^#{1,3} Operations in production$/m.test(read(file)));
    expect(titled).toEqual(['docs/operations.md']);
  });
});

describe('names in README.md and the guides', () => {
  let known: KnownNames;

  beforeAll(() => {
    known = knownNames(ROOT);
  }, 60_000);

  it('read what lib/ has (exports, events, variables, option paths)', () => {
    expect(known.exports).toContain('PaymentsValidationError');
    expect(known.events).toContain('payment.confirmed');
    expect(known.env).toContain('PAYMENTS_WEBHOOK_SECRET');
    for (const option of [
      'publicKey',
      'webhook.leaseMs',
      'webhook.decorators',
      'reconciliation.maxChecks',
      'telemetry.backlogIntervalSecs',
      'isGlobal',
    ])
      expect(known.options).toContain(option);
  });

  it('catch a name lib/ does not have', () => {
    const wrong = [
      'Throws `PaymentsTimeoutError`; listen for `payment.settled` with `@OnPaymentMismatch()`.',
      'Set PAYMENTS_WEBHOOK_TOKEN, or `webhook.leaseSecs`.',
      '',
      '| option | default | meaning |',
      '|---|---|---|',
      '| `publicKey`, `retries` | none | x |',
    ].join('\n');
    expect(unknownNames(wrong, known).sort()).toEqual(
      [
        'decorator @OnPaymentMismatch() is not exported',
        'environment variable PAYMENTS_WEBHOOK_TOKEN is not read by paymentsOptionsFromConfig',
        'error class PaymentsTimeoutError is not exported',
        'event payment.settled is not in PaymentEvents',
        'option retries (options table) does not exist',
        'option webhook.leaseSecs does not exist',
      ].sort(),
    );
    expect(
      unknownNames(
        '`PaymentsValidationError` on `payment.confirmed`; PAYMENTS_BASE_URL sets `baseUrl`, `webhook.leaseMs`.',
        known,
      ),
    ).toEqual([]);
  });

  it.each(DOCUMENTS)('%s names only options, events, error classes and variables that exist', (file) => {
    expect(unknownNames(read(file), known)).toEqual([]);
  });
});
