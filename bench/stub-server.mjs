// A loopback stub of generate_payment, run in its own process so that its CPU is not counted
// against the client under test. Answers the spec's success shape with a new payment id each time.
import http from 'node:http';

let count = 0;
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
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
  if (message?.type === 'count') process.send({ type: 'count', count });
  if (message?.type === 'stop') {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  }
});
process.on('disconnect', () => process.exit(0));
