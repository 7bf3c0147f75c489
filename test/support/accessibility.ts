import axe from 'axe-core';
import type { BrowserContext } from 'playwright-core';

/** One rule axe found broken on a page, with the elements that break it. */
export interface AxeViolation {
  /** The rule, e.g. `color-contrast`. */
  id: string;
  /** How much it hinders a person: `minor`, `moderate`, `serious` or `critical`. */
  impact: string;
  /** The CSS selectors of the elements that break it. */
  targets: string[];
}

/**
 * axe-core's violations on the page at `url`, opened in `context`. Its source is evaluated through
 * the DevTools protocol (page.evaluate), not added as a `<script>`: the desk's
 * Content-Security-Policy allows no script, and the page keeps its real policy. `context` must have
 * JavaScript on (axe waits on timers, which never fire with it off): a test browsing with it off
 * audits each page by loading it again here, so only GET pages can be audited.
 */
export async function axeViolations(context: BrowserContext, url: string): Promise<AxeViolation[]> {
  const page = await context.newPage();
  try {
    await page.goto(url);
    // Strings, not functions: tsconfig has no DOM types, and they run in the page.
    await page.evaluate(axe.source);
    return await page.evaluate(`axe.run(document, { resultTypes: ['violations'] }).then((r) =>
      r.violations.map((v) => ({ id: v.id, impact: String(v.impact), targets: v.nodes.map((n) => n.target.join(' ')) })))`);
  } finally {
    await page.close();
  }
}

/** The violations that stop or badly hinder someone (axe's `serious` and `critical`), as `rule: selector` lines. */
export function blocking(violations: AxeViolation[]): string[] {
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .flatMap((v) => v.targets.map((t) => `${v.impact} ${v.id}: ${t}`));
}
