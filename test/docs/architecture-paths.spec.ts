// docs/architecture.md's call paths hold when the calls are followed: in each `a → b → c` of its
// "Call paths" table, a calls a function, method or constructor declared in b (or a method of an
// interface a class of b implements: a call through a port), and b one declared in c. Followed
// with the TypeScript compiler's type checker, so an import that is never called does not count.
import { beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

const ROOT = join(import.meta.dirname, '../..');
const LIB = join(ROOT, 'lib');

interface DocPath {
  behaviour: string;
  files: string[];
}

/** The rows of the "Call paths" table: each behaviour and its files, `lib/`-relative. */
function docPaths(): DocPath[] {
  const markdown = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
  const section = /^## Call paths\n([\s\S]*?)(?=^## )/m.exec(markdown)?.[1] ?? '';
  const rows: DocPath[] = [];
  for (const line of section.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    if (cells.length < 4 || !cells[2].includes('→')) continue;
    const files = cells[2].split('→').map((step) => /`([^`]+\.ts)`/.exec(step)?.[1] ?? `(no file in "${step.trim()}")`);
    rows.push({ behaviour: cells[1], files });
  }
  return rows;
}

let program: ts.Program;
let checker: ts.TypeChecker;
const calls = new Map<string, Set<string>>();

/** The files whose declarations `file` calls (lib-relative). */
function calledFrom(file: string): Set<string> {
  const known = calls.get(file);
  if (known) return known;
  const found = new Set<string>();
  const source = program.getSourceFile(join(LIB, file));
  if (!source) throw new Error(`${file} is not a file of lib/`);
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) || ts.isNewExpression(node)) {
      const declaration = checker.getResolvedSignature(node)?.getDeclaration();
      if (declaration) for (const target of declaringFiles(declaration)) found.add(target);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  calls.set(file, found);
  return found;
}

/** The file of a declaration, and for an interface's method the files of the classes that implement it. */
function declaringFiles(declaration: ts.Declaration): string[] {
  const files = [relative(declaration.getSourceFile().fileName)];
  const owner = declaration.parent;
  const name = ts.getNameOfDeclaration(declaration);
  if (!owner || !ts.isInterfaceDeclaration(owner) || !name) return files;
  const port = symbolOf(owner.name);
  const member = name.getText();
  for (const source of program.getSourceFiles()) {
    if (!source.fileName.startsWith(LIB)) continue;
    for (const statement of source.statements) {
      if (!ts.isClassDeclaration(statement)) continue;
      const implemented = (statement.heritageClauses ?? [])
        .filter((clause) => clause.token === ts.SyntaxKind.ImplementsKeyword)
        .flatMap((clause) => clause.types.map((type) => symbolOf(type.expression)));
      const hasMember = statement.members.some((m) => m.name?.getText() === member);
      if (hasMember && port && implemented.includes(port)) files.push(relative(source.fileName));
    }
  }
  return files;
}

/** The symbol a name stands for, through its imports. */
function symbolOf(node: ts.Node): ts.Symbol | undefined {
  const symbol = checker.getSymbolAtLocation(node);
  return symbol && symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
}

const relative = (fileName: string): string => fileName.slice(LIB.length + 1);

/** The steps of a path that do not hold: `a → b` where a calls nothing declared in b. */
function brokenSteps(files: string[]): string[] {
  const broken: string[] = [];
  for (let i = 0; i + 1 < files.length; i++) {
    if (!calledFrom(files[i]).has(files[i + 1])) broken.push(`${files[i]} → ${files[i + 1]}`);
  }
  return broken;
}

beforeAll(() => {
  const config = ts.getParsedCommandLineOfConfigFile(
    join(ROOT, 'tsconfig.json'),
    {},
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined },
  );
  if (!config) throw new Error('tsconfig.json could not be read');
  program = ts.createProgram({ rootNames: config.fileNames.filter((f) => f.startsWith(LIB)), options: config.options });
  checker = program.getTypeChecker();
}, 120_000);

describe('docs/architecture.md: the call paths', () => {
  const paths = docPaths();

  it('lists the paths a reviewer follows, none over three files', () => {
    const behaviours = paths.map((p) => p.behaviour).join('\n');
    expect(behaviours).toMatch(/handlers are invoked/);
    expect(behaviours).toMatch(/token check/);
    for (const path of paths) expect({ [path.behaviour]: path.files.length <= 3 }).toEqual({ [path.behaviour]: true });
  });

  it.each(paths.map((p) => [p.behaviour, p.files] as const))(
    '%s: each file calls into the next',
    (_behaviour, files) => {
      expect(brokenSteps(files)).toEqual([]);
    },
  );

  it('finds a path that does not hold (the check is not vacuous)', () => {
    expect(brokenSteps(['core/webhook/webhook.token.ts', 'core/settlement/settlement.runner.ts'])).toEqual([
      'core/webhook/webhook.token.ts → core/settlement/settlement.runner.ts',
    ]);
    // An import alone is no call: the attempt imports a type of the events' module, and calls nothing of it.
    expect(brokenSteps(['core/settlement/settlement.attempt.ts', 'core/settlement/payment.events.ts'])).toHaveLength(1);
  });
});
