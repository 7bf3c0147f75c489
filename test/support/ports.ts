import net from 'node:net';

/**
 * A free TCP port on the loopback interface, for a server whose URL must be known before it
 * listens (free when asked; another process may take it later, so a test that can listen on port
 * 0 should).
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
