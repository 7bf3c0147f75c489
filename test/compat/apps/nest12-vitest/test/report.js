// Prints this app's line for test/compat/run.sh once `npm run test:e2e` has passed: the
// scenario wrote what it checked to .compat-result.json.
import { readFileSync } from 'node:fs';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const result = JSON.parse(readFileSync(new URL('../.compat-result.json', import.meta.url), 'utf8'));
console.log(`${pkg.name.replace(/^compat-/, '')}: ok (e2e test: generate, confirm, refund) [${result.details}]`);
