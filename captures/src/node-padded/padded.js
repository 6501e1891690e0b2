// node-padded: Node's http2 (h2c) with paddingStrategy MAX on both sides, server and client in
// one process on 127.0.0.1:0: a POST of 64 KiB answered with 64 KiB. Padded DATA frames for
// h2ledger's flow-control tests (padding counts against the windows). Prints {"port": P} once
// listening, then waits PAUSE ms (tcpdump starts) before the request.
'use strict';
const http2 = require('http2');
const pause = Number(process.argv[2] || 2000);
const MAX = http2.constants.PADDING_STRATEGY_MAX;
const body = Buffer.alloc(64 * 1024, 7);
const server = http2.createServer({ paddingStrategy: MAX });
server.on('stream', (stream) => {
  let n = 0;
  stream.on('data', (d) => { n += d.length; });
  stream.on('end', () => {
    stream.respond({ ':status': 200, 'x-read': String(n) });
    stream.end(body);
  });
});
server.listen(0, '127.0.0.1', () => {
  const port = server.address().port;
  console.log(JSON.stringify({ port }));
  setTimeout(() => {
    const client = http2.connect(`http://127.0.0.1:${port}`, { paddingStrategy: MAX });
    const req = client.request({ ':method': 'POST', ':path': '/echo' });
    let got = 0;
    req.on('data', (d) => { got += d.length; });
    req.on('end', () => {
      console.log(JSON.stringify({ posted: body.length, received: got }));
      client.close(() => server.close());
    });
    req.end(body);
  }, pause);
});
