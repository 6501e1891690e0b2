#!/usr/bin/python3
"""hyper-h2 (python3-h2) over Python's ssl, writing the key log with
SSLContext.keylog_filename: N GET requests multiplexed on one connection.

usage: client.py HOST PORT KEYLOG N [--tls12]
--tls12: TLS 1.2 with ECDHE-RSA-AES256-GCM-SHA384; else TLS 1.3.
"""
import socket
import ssl
import sys

import h2.config
import h2.connection
import h2.events

host, port, keylog, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
ctx.keylog_filename = keylog
ctx.set_alpn_protocols(["h2"])
if "--tls12" in sys.argv:
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_ciphers("ECDHE-RSA-AES256-GCM-SHA384")
sock = ctx.wrap_socket(socket.create_connection((host, port)), server_hostname="localhost")
assert sock.selected_alpn_protocol() == "h2", sock.selected_alpn_protocol()
conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
conn.initiate_connection()
sock.sendall(conn.data_to_send())
for i in range(n):
    sid = conn.get_next_available_stream_id()
    conn.send_headers(sid, [(":method", "GET"), (":path", "/index.html"), (":scheme", "https"),
                            (":authority", "%s:%d" % (host, port))], end_stream=True)
sock.sendall(conn.data_to_send())
done = 0
while done < n:
    data = sock.recv(65536)
    if not data:
        break
    for ev in conn.receive_data(data):
        if isinstance(ev, h2.events.DataReceived):
            conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
        elif isinstance(ev, h2.events.StreamEnded):
            done += 1
    sock.sendall(conn.data_to_send())
conn.close_connection()
sock.sendall(conn.data_to_send())
sock.close()
print('{"calls_made": %d, "completed": %d}' % (n, done))
