// What the README and the guides may name, read from lib/ itself (the TypeScript compiler's view of
// the entry points), and the check of one Markdown text against it.
import ts from 'typescript';
import { join } from 'node:path';
import { CLI_STORE_ENV } from '../../lib/cli/cli.config.js';
import { PAYMENTS_ENV, PaymentEvents } from '../../lib/index.js';

/** The names a document is checked against. */
export interface KnownNames {
  /** Every export of every entry point (values and types). */
  exports: ReadonlySet<string>;
  /** Event names (`payment.confirmed`, ...). */
  events: ReadonlySet<string>;
  /** Environment variables read by `paymentsOptionsFromConfig`. */
  env: ReadonlySet<string>;
  /** Option paths of `PaymentsModule.forRoot` / `forRootAsync` (`publicKey`, `webhook.leaseMs`, ...). */
  options: ReadonlySet<string>;
}

const ENTRY_POINTS = [
  'index.ts',
  'express/index.ts',
  'store/index.ts',
  'redis/index.ts',
  'postgres/index.ts',
  'testing/index.ts',
  'terminus/index.ts',
  'medusa/index.ts',
  'desk/index.ts',
];

/** Reads the exports and option paths from lib/ with the compiler, the events and variables from the code. */
export function knownNames(root: string): KnownNames {
  const files = ENTRY_POINTS.map((entry) => join(root, 'lib', entry));
  const program = ts.createProgram(files, {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    experimentalDecorators: true,
    strict: true,
    skipLibCheck: true,
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  const exports = new Set<string>();
  const symbols = new Map<string, ts.Symbol>();
  for (const file of files) {
    const source = program.getSourceFile(file);
    const moduleSymbol = source && checker.getSymbolAtLocation(source);
    if (!moduleSymbol) throw new Error(`cannot read the exports of ${file}`);
    for (const symbol of checker.getExportsOfModule(moduleSymbol)) {
      exports.add(symbol.name);
      symbols.set(symbol.name, symbol);
    }
  }

  const options = new Set<string>();
  const collect = (type: ts.Type, prefix: string, depth: number): void => {
    for (const property of checker.getPropertiesOfType(type)) {
      const path = `${prefix}${property.name}`;
      options.add(path);
      const declaration = property.valueDeclaration ?? property.declarations?.[0];
      if (depth === 0 || !declaration) continue;
      const inner = checker.getNonNullableType(checker.getTypeOfSymbolAtLocation(property, declaration));
      // Nested option objects (webhook, reconciliation, telemetry, handlers); not arrays, functions or stores.
      const objects = inner.isUnion() ? inner.types : [inner];
      for (const part of objects)
        if (
          part.flags & ts.TypeFlags.Object &&
          part.getCallSignatures().length === 0 &&
          !checker.isArrayType(part) &&
          ['webhook', 'reconciliation', 'telemetry', 'handlers'].includes(property.name)
        )
          collect(part, `${path}.`, depth - 1);
    }
  };
  for (const name of [
    'PaymentsModuleOptions',
    'PaymentsModuleAsyncOptions',
    'PaymentsOptions',
    'MedusaPaymentsOptions',
  ]) {
    const symbol = symbols.get(name);
    if (!symbol) throw new Error(`${name} is not exported`);
    const resolved = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
    collect(checker.getDeclaredTypeOfSymbol(resolved), '', 1);
  }

  return {
    exports,
    events: new Set(Object.values(PaymentEvents)),
    // The module's variables, and the CLI's own store variables (docs/cli.md).
    env: new Set([...(Object.values(PAYMENTS_ENV) as string[]), ...Object.values(CLI_STORE_ENV)]),
    options,
  };
}

/** Built-in classes a document may name beside the plugin's. */
const BUILT_IN = new Set(['Error', 'TypeError', 'AggregateError', 'RangeError']);

/** The text of a document outside its fenced code blocks (those are compiled instead). */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```$/gm, '');
}

/**
 * What a document names that lib/ does not have: error classes, events, `PAYMENTS_*` variables,
 * `@On...()` decorators and option paths in inline code, and every option in an options table
 * (`| option | default | meaning |`).
 */
export function unknownNames(markdown: string, known: KnownNames): string[] {
  const problems: string[] = [];
  const text = prose(markdown);
  const spans = [...text.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]);
  for (const span of spans) {
    for (const [name] of span.matchAll(/\b[A-Z]\w*Error\b/g))
      if (!known.exports.has(name) && !BUILT_IN.has(name)) problems.push(`error class ${name} is not exported`);
    for (const [name] of span.matchAll(/(?<![\w.])payment\.[a-z]+\b(?!\.)/g))
      if (!known.events.has(name)) problems.push(`event ${name} is not in PaymentEvents`);
    for (const [, name] of span.matchAll(/@(On\w+)\(/g))
      if (!known.exports.has(name)) problems.push(`decorator @${name}() is not exported`);
    // A source file's name (`webhook.token.ts`, `core/webhook/…`) is not an option path.
    if (/\.(?:ts|js|mjs)$|\//.test(span)) continue;
    for (const [name] of span.matchAll(/(?<![\w.])(?:webhook|reconciliation|telemetry)\.[a-z]\w*\b/g))
      if (!known.options.has(name)) problems.push(`option ${name} does not exist`);
  }
  for (const [name] of text.matchAll(/\bPAYMENTS_[A-Z0-9_]*[A-Z0-9]\b/g))
    // A second account's variables: paymentsOptionsFromConfig's `prefix` (PAYMENTS_OUTLET_PUBLIC_KEY).
    if (
      !known.env.has(name) &&
      !known.exports.has(name) &&
      !known.env.has(name.replace(/^PAYMENTS_[A-Z0-9]+_/, 'PAYMENTS_'))
    )
      problems.push(`environment variable ${name} is not read by paymentsOptionsFromConfig`);
  // The options table: each backticked name of its first column is an option path.
  for (const table of text.matchAll(/^\| option \| default \| meaning \|\n\|[-|]+\|\n((?:\|.*\|\n?)+)/gm))
    for (const row of table[1].split('\n').filter(Boolean))
      for (const [, name] of row.split('|')[1].matchAll(/`([\w.]+)`/g))
        if (!known.options.has(name)) problems.push(`option ${name} (options table) does not exist`);
  return [...new Set(problems)];
}
