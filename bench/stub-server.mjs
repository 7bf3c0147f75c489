// A loopback stub of the service, run in its own process so that its CPU is not counted against
// the client or app under test, and kept as cheap as a server can be so that it never becomes the
// bottleneck of what it measures: every answer is a pre-serialised Buffer with pre-built headers,
// the request body is drained without being read, and nothing is parsed.
//
// generate_payment answers the spec's success shape with a new payment id each time (from a ring
// of pre-serialised answers, so ids only repeat after RING calls); verify_payment answers SUCCESS
// for 12500 millimes (no tracking id) and counts the calls (`GET /__count`, or `{type: 'count'}`
// over IPC, answers both counts).
//
// With `--echo-tracking` (bench/growth.mjs), every generated payment id is new (no ring) and
// carries the request's tracking id after `__` (`pay_<pid>_<n>__<tracking id>`), and verify_payment
// answers that tracking id: a payment generated for an order is confirmed, not a mismatch. The
// request body is then read (a regular expression on the raw JSON), which costs the stub a little.
import http from 'node:http';

const RING = 8192;
const VERIFY = '/api/v2/verify_payment/';
const GENERATE = '/api/v2/generate_payment';
const headersOf = (body) => ({ 'content-type': 'application/json', 'content-length': String(body.length) });

const generated = Array.from({ length: RING }, (_, i) => {
  const id = `pay_${process.pid.toString(36)}_${i.toString(36)}`;
  const body = Buffer.from(
    `{"result":{"success":true,"payment_id":"${id}","link":"https://checkout.example/shop/${id}","developer_tracking_id":"order-42"},"name":"Payment Service","code":0,"version":"v2"}`,
  );
  return { body, headers: headersOf(body) };
});
// verify_payment: every payment is paid, for the amount every bench payment is generated with.
const VERIFIED = Buffer.from(
  '{"success":true,"result":{"type":"card","amount":12500,"status":"SUCCESS","details":{"order_number":"1","pan":"450921**1119","payment_system":"VISA","currency":"788","destinations":[]}},"status_code":200,"name":"developers","code":0,"version":"2.0.0"}',
);
const VERIFIED_HEADERS = headersOf(VERIFIED);
const BAD = Buffer.from('{"result":{"status":400,"message":"Bad Request"}}');
const BAD_HEADERS = headersOf(BAD);

const ECHO = process.argv.includes('--echo-tracking');
const PID = process.pid.toString(36);
const TRACKING = /"developer_tracking_id":"([^"\\]*)"/;

/** generate_payment with --echo-tracking: a new id carrying the request's tracking id. */
function echoGenerated(raw) {
  const tracking = TRACKING.exec(raw)?.[1];
  const id = `pay_${PID}_${(count++).toString(36)}${tracking ? `__${tracking}` : ''}`;
  const tail = tracking ? `,"developer_tracking_id":"${tracking}"` : '';
  return Buffer.from(
    `{"result":{"success":true,"payment_id":"${id}","link":"https://checkout.example/shop/${id}"${tail}},"name":"Payment Service","code":0,"version":"v2"}`,
  );
}

/**
 * verify_payment with --echo-tracking: 12500 millimes with the id's tracking id, SUCCESS unless the
 * tracking id starts with `expired-` (EXPIRED: an abandoned checkout) or `pending-` (PENDING).
 */
function echoVerified(id) {
  const at = id.indexOf('__');
  if (at < 0) return VERIFIED;
  const tracking = id.slice(at + 2);
  const status = tracking.startsWith('expired-') ? 'EXPIRED' : tracking.startsWith('pending-') ? 'PENDING' : 'SUCCESS';
  return Buffer.from(
    `{"success":true,"result":{"type":"card","amount":12500,"status":"${status}","developer_tracking_id":"${tracking}","details":{"order_number":"1","pan":"450921**1119","payment_system":"VISA","currency":"788","destinations":[]}},"status_code":200,"name":"developers","code":0,"version":"2.0.0"}`,
  );
}

let count = 0;
/** verify_payment calls answered. */
let verifies = 0;

function answer(req, res, raw) {
  const url = req.url;
  if (url === '/__count') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ count, verifies }));
    return;
  }
  const authorized = typeof req.headers.authorization === 'string' && req.headers.authorization.startsWith('Bearer ');
  if (authorized && req.method === 'GET' && url.startsWith(VERIFY)) {
    verifies++;
    if (ECHO) {
      const body = echoVerified(decodeURIComponent(url.slice(VERIFY.length)));
      res.writeHead(200, headersOf(body));
      res.end(body);
      return;
    }
    res.writeHead(200, VERIFIED_HEADERS);
    res.end(VERIFIED);
    return;
  }
  if (authorized && req.method === 'POST' && url === GENERATE && ECHO) {
    const body = echoGenerated(raw);
    res.writeHead(200, headersOf(body));
    res.end(body);
    return;
  }
  if (authorized && req.method === 'POST' && url === GENERATE) {
    const { body, headers } = generated[count++ % RING];
    res.writeHead(200, headers);
    res.end(body);
    return;
  }
  res.writeHead(400, BAD_HEADERS);
  res.end(BAD);
}

const server = http.createServer((req, res) => {
  // Answer once the request is in (a POST's body drained unread): answering earlier would let a
  // client measure a race, not a call.
  if (ECHO) {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => (raw += chunk));
    req.on('end', () => answer(req, res, raw));
    return;
  }
  if (req.complete) return answer(req, res);
  req.on('end', () => answer(req, res));
  req.resume();
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.send({ type: 'ready', port: server.address().port }));
process.on('message', (message) => {
  if (message?.type === 'count') process.send({ type: 'count', count, verifies });
  if (message?.type === 'stop') {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  }
});
process.on('disconnect', () => process.exit(0));
