// Node's http2 (nghttp2 inside) client and server on loopback, exercising the frame types and
// flags other captures lack: PUSH_PROMISE, PRIORITY, CONTINUATION, padding (PADDED on DATA and
// HEADERS), trailers, a custom PING payload, RST_STREAM, SETTINGS changed mid-connection and
// GOAWAY. usage: node workload.js [GO_FILE]: prints {"port": P} on stdout, waits until GO_FILE
// exists (the capture is running; without it, 1 s), runs the client, prints a JSON summary.
'use strict';
const http2 = require('http2');
const { PADDING_STRATEGY_MAX, NGHTTP2_CANCEL } = http2.constants;

const server = http2.createServer({ paddingStrategy: PADDING_STRATEGY_MAX });
server.on('stream', (stream, headers) => {
  const path = headers[':path'];
  if (path === '/push') {
    stream.pushStream({ ':path': '/pushed.css' }, (err, push) => {
      if (err) throw err;
      push.respond({ ':status': 200, 'content-type': 'text/css' });
      push.end('body { color: red }\n');
    });
    stream.respond({ ':status': 200, 'content-type': 'text/html' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'x-checksum': 'abc123' }));
    stream.end('<html>pushed</html>\n');
  } else if (path === '/slow') {
    stream.respond({ ':status': 200 });
    stream.write('first part\n');
    stream.on('close', () => {});
  } else {
    stream.respond({ ':status': 200, 'x-big': 'y'.repeat(20000) });
    stream.end('hello ' + path + '\n');
  }
});

server.listen(0, '127.0.0.1', async () => {
  const port = server.address().port;
  process.stdout.write(JSON.stringify({ port }) + '\n');
  const go = process.argv[2];
  const fs = require('fs');
  for (let i = 0; go ? !fs.existsSync(go) && i < 600 : i < 10; i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
  const client = http2.connect(`http://127.0.0.1:${port}`, { paddingStrategy: PADDING_STRATEGY_MAX });
  const summary = { program: 'node-http2 ' + process.version, port, requests: 0, pushes: 0 };
  client.on('stream', (push) => { summary.pushes++; push.resume(); });
  const get = (path, extra = {}) => new Promise((resolve) => {
    const req = client.request({ ':path': path, ...extra });
    summary.requests++;
    req.on('response', () => {});
    req.on('trailers', (t) => { summary.trailers = t['x-checksum']; });
    req.resume();
    req.on('end', resolve);
    req.end();
  });
  await get('/push');
  await new Promise((r) => client.ping(Buffer.from('h2ledger'), () => r()));
  client.settings({ initialWindowSize: 1 << 20, maxFrameSize: 32768 });
  await get('/continuation', { 'x-big-request': 'z'.repeat(20000) });
  // PRIORITY: reprioritise an open stream.
  const slow = client.request({ ':path': '/slow' });
  summary.requests++;
  await new Promise((r) => slow.once('data', r));
  slow.priority({ weight: 200, exclusive: false, silent: false });
  await new Promise((r) => setTimeout(r, 50));
  slow.close(NGHTTP2_CANCEL); // RST_STREAM
  await new Promise((r) => setTimeout(r, 50));
  await get('/last');
  for (const s of server.sessions || []) s.goaway();
  await new Promise((r) => setTimeout(r, 100));
  client.close();
  server.close();
  summary.calls_made = summary.requests;
  process.stdout.write(JSON.stringify(summary) + '\n');
});
server.on('session', (s) => { (server.sessions = server.sessions || []).push(s); });
