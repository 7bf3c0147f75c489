// The API reference as a user reads it (`npm run docs`, loaded by typedoc.json's "plugin"):
//   - each guide is listed by its title (its first `# ` heading), not by its file name;
//   - each entry point is named as the package's subpath a user imports (`nestjs-payments`,
//     `nestjs-payments/express`...), not as its folder (`index`, `express`);
//   - members no user calls are left out: `[inspect.custom]` (what `console.log` prints; the
//     classes implement it to keep keys out of logs).
import { Converter, ReflectionKind, RendererEvent } from 'typedoc';

/** The package's name: the subpaths are named under it. */
const PACKAGE = 'nestjs-payments';

/** Members that exist for Node's own machinery, never called by a user. */
const HIDDEN_MEMBERS = new Set(['[custom]']);

/** The first `# ` heading of a Markdown text, or undefined. */
export function titleOf(markdown) {
  return /^# (.+)$/m.exec(markdown)?.[1]?.trim();
}

/** The subpath a user imports, for an entry point named after its folder (`index` is the root). */
export function subpathName(moduleName) {
  return moduleName === 'index' ? PACKAGE : `${PACKAGE}/${moduleName}`;
}

/** A document's page name: its file name (`docs/testing` -> `testing`), a folder's README named after the folder. */
export function pageName(documentName) {
  const parts = documentName.split('/');
  const last = parts.at(-1);
  return last === 'README' && parts.length > 1 ? parts.at(-2) : last;
}

/** @param {import('typedoc').Application} app */
export function load(app) {
  // A guide's page is documents/<file>.html whatever folder it is in (docs/, sample-app/README.md).
  app.converter.on(Converter.EVENT_CREATE_DOCUMENT, (_context, document) => {
    document.name = pageName(document.name);
  });
  // Renamed once the pages' addresses are set: a guide stays at documents/<file>.html.
  app.renderer.on(RendererEvent.BEGIN, (event) => {
    for (const document of event.project.getReflectionsByKind(ReflectionKind.Document)) {
      const title = titleOf(document.content.map((part) => part.text).join(''));
      if (title !== undefined) document.name = title;
    }
  });
  app.converter.on(Converter.EVENT_RESOLVE_BEGIN, (context) => {
    const { project } = context;
    for (const module of project.getReflectionsByKind(ReflectionKind.Module)) {
      if (module.parent === project) module.name = subpathName(module.name);
    }
    for (const member of project.getReflectionsByKind(ReflectionKind.Method)) {
      if (HIDDEN_MEMBERS.has(member.name)) project.removeReflection(member);
    }
  });
}
