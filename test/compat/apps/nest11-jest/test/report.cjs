// Prints this app's line for test/compat/run.sh once `npm run test:e2e` has passed: the
// scenario wrote what it checked to .compat-result.json.
const { readFileSync } = require('node:fs');
const path = require('node:path');
const name = require('../package.json').name.replace(/^compat-/, '');
const result = JSON.parse(readFileSync(path.join(__dirname, '..', '.compat-result.json'), 'utf8'));
const health = JSON.parse(readFileSync(path.join(__dirname, '..', '.compat-health.json'), 'utf8'));
console.log(`${name}: ok (e2e test: generate, confirm, refund; /health up) [${result.details}, ${health.details}]`);
