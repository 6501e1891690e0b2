// The workload of captures/grpcjs (scripts/make-grpcjs-capture.sh): grpc-js from npm, server
// and client in one process on 127.0.0.1, port 0 (printed on stderr, then 1.5 s for tcpdump).
// Prints on stdout what the client saw: each call's method and status, in the order they ended.
// Channel 1: 10 unary calls, NOT_FOUND, INTERNAL, a 100 ms deadline on a 300 ms call, 200 kB
// each way, a cancel after 50 ms, server, client and bidi streaming, keepalive PINGs every
// 300 ms; channel 2: 3 calls compressed with gzip.
const grpc = require('@grpc/grpc-js');
const loader = require('@grpc/proto-loader');
const path = require('path');
const def = grpc.loadPackageDefinition(loader.loadSync(path.join(__dirname, 'echo.proto'))).h2ledger.echo;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const server = new grpc.Server({'grpc.keepalive_time_ms': 400, 'grpc.keepalive_timeout_ms': 5000, 'grpc.keepalive_permit_without_calls': 1});
server.addService(def.Echo.service, {
  Unary: (call, cb) => {
    const t = call.request.text;
    if (t === 'missing') return cb({code: grpc.status.NOT_FOUND, details: 'no such thing'});
    if (t === 'boom') return cb({code: grpc.status.INTERNAL, details: 'boom'});
    if (t === 'slow') return setTimeout(() => cb(null, {text: 'late'}), 300);
    cb(null, {text: t, blob: call.request.blob, n: call.request.n});
  },
  Server: (call) => {
    for (let i = 0; i < call.request.n; i++) call.write({text: 'part', n: i, blob: Buffer.alloc(1000, i)});
    call.end();
  },
  Client: (call, cb) => {
    let n = 0, bytes = 0;
    call.on('data', (m) => { n++; bytes += m.blob.length; });
    call.on('end', () => cb(null, {text: 'got', n: n, blob: Buffer.alloc(8)}));
  },
  Bidi: (call) => {
    call.on('data', (m) => call.write({text: 'echo', n: m.n}));
    call.on('end', () => call.end());
  },
});
const truth = {program: 'grpc-js ' + require('@grpc/grpc-js/package.json').version + ' (npm) on Node ' + process.version, calls: []};
server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), async (err, port) => {
  if (err) throw err;
  truth.port = port;
  process.stderr.write(`port ${port}\n`);
  await sleep(1500); // tcpdump started by the caller on the printed port
  const opts = {'grpc.keepalive_time_ms': 300, 'grpc.keepalive_permit_without_calls': 1, 'grpc.default_compression_algorithm': 0};
  const c = new def.Echo(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), opts);
  const unary = (text, extra = {}, deadlineMs) => new Promise((res) => {
    const o = deadlineMs ? {deadline: Date.now() + deadlineMs} : {};
    c.Unary({text, ...extra}, new grpc.Metadata(), o, (e, r) => {
      truth.calls.push({method: '/h2ledger.echo.Echo/Unary', text, status: e ? e.code : 0});
      res();
    });
  });
  for (let i = 0; i < 10; i++) await unary('hello ' + i, {n: i});
  await unary('missing');
  await unary('boom');
  await unary('slow', {}, 100);            // DEADLINE_EXCEEDED: the client's RST_STREAM
  await unary('big', {blob: Buffer.alloc(200000, 7)}); // flow control both ways
  await new Promise((res) => { // cancelled by the client
    const call = c.Unary({text: 'slow'}, (e) => { truth.calls.push({method: '/h2ledger.echo.Echo/Unary', text: 'cancelled', status: e ? e.code : 0}); res(); });
    setTimeout(() => call.cancel(), 50);
  });
  await new Promise((res) => { let n = 0; const s = c.Server({n: 20}); s.on('data', () => n++); s.on('end', () => {}); s.on('status', (st) => { truth.calls.push({method: '/h2ledger.echo.Echo/Server', messages: n, status: st.code}); res(); }); });
  await new Promise((res) => { const s = c.Client((e, r) => { truth.calls.push({method: '/h2ledger.echo.Echo/Client', messages: 5, status: e ? e.code : 0}); res(); }); for (let i = 0; i < 5; i++) s.write({blob: Buffer.alloc(3000, i)}); s.end(); });
  await new Promise((res) => { let n = 0; const s = c.Bidi(); s.on('data', () => n++); s.on('status', (st) => { truth.calls.push({method: '/h2ledger.echo.Echo/Bidi', messages: n, status: st.code}); res(); }); for (let i = 0; i < 6; i++) s.write({n: i}); s.end(); });
  await sleep(1000); // keepalive PINGs on an idle connection
  // gzip-compressed calls on a second channel
  const cz = new def.Echo(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {'grpc.default_compression_algorithm': 2, 'grpc.use_local_subchannel_pool': 1});
  for (let i = 0; i < 3; i++) await new Promise((res) => cz.Unary({text: 'zipped ' + 'x'.repeat(500)}, (e) => { truth.calls.push({method: '/h2ledger.echo.Echo/Unary', text: 'zipped', status: e ? e.code : 0}); res(); }));
  truth.calls_made = truth.calls.length;
  c.close(); cz.close();
  await sleep(300);
  server.tryShutdown(() => { process.stdout.write(JSON.stringify(truth) + '\n'); process.exit(0); });
});
