// A loopback stub of the service, run in its own process so that its CPU is not counted against
// the client or app under test: generate_payment answers the spec's success shape with a new
// payment id each time; verify_payment answers SUCCESS for 12500 millimes (no tracking id) and
// counts the calls (`GET /__count`, or `{type: 'count'}` over IPC, answers both counts).
import http from 'node:http';

let count = 0;
/** verify_payment calls answered, in total and per payment id (the verify budget). */
let verifies = 0;
const VERIFY = '/api/v2/verify_payment/';
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    if (req.url === '/__count') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ count, verifies }));
      return;
    }
    // verify_payment: every payment is paid, for the amount every bench payment is generated with.
    if (req.method === 'GET' && req.url.startsWith(VERIFY) && req.headers.authorization?.startsWith('Bearer ')) {
      verifies++;
      const body = `{"success":true,"result":{"type":"card","amount":12500,"status":"SUCCESS","details":{"order_number":"1","pan":"450921**1119","payment_system":"VISA","currency":"788","destinations":[]}},"status_code":200,"name":"developers","code":0,"version":"2.0.0"}`;
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    if (req.method === 'POST' && req.url === '/api/v2/generate_payment' && req.headers.authorization?.startsWith('Bearer ')) {
      const id = `pay_${(++count).toString(36)}`;
      const body = `{"result":{"success":true,"payment_id":"${id}","link":"https://checkout.example/shop/${id}","developer_tracking_id":"order-42"},"name":"Payment Service","code":0,"version":"v2"}`;
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    const body = '{"result":{"status":400,"message":"Bad Request"}}';
    res.writeHead(400, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
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
