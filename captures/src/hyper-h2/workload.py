"""hyper-h2 (Debian's python3-h2) client and server on loopback, one process, two threads.

usage: /usr/bin/python3 workload.py [GO_FILE]
Prints {"port": P}, waits until GO_FILE exists (the capture is running; without it 1 s), then
the client: a GET with priority (HEADERS with the PRIORITY flag) answered with a server push
(PUSH_PROMISE) and padded DATA; a POST whose body is padded and followed by request trailers;
a PING with a custom payload; SETTINGS changed mid-connection; a request the client resets
(RST_STREAM); GOAWAY. Prints a JSON summary."""
import json
import os
import socket
import sys
import threading
import time

import h2.config
import h2.connection
import h2.events
import h2.settings


def serve(lsock):
    sock, _ = lsock.accept()
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    bodies = {}
    while True:
        try:
            data = sock.recv(65536)
        except ConnectionResetError:
            break
        if not data:
            break
        for ev in conn.receive_data(data):
            if isinstance(ev, h2.events.RequestReceived):
                bodies[ev.stream_id] = dict(ev.headers)
            elif isinstance(ev, h2.events.DataReceived):
                conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, (h2.events.StreamEnded,)):
                h = bodies.get(ev.stream_id, {})
                path = h.get(b":path", h.get(":path", b"/"))
                if isinstance(path, str):
                    path = path.encode()
                sid = ev.stream_id
                if path == b"/push":
                    pid = conn.get_next_available_stream_id()
                    conn.push_stream(sid, pid, [(":method", "GET"), (":path", "/pushed.css"),
                                                (":scheme", "http"), (":authority", "127.0.0.1")])
                    conn.send_headers(pid, [(":status", "200"), ("content-type", "text/css")])
                    conn.send_data(pid, b"body {}\n", end_stream=True, pad_length=16)
                if path == b"/slow":
                    conn.send_headers(sid, [(":status", "200")])
                    conn.send_data(sid, b"partial", pad_length=8)
                    continue
                conn.send_headers(sid, [(":status", "200"), ("server", "hyper-h2")])
                conn.send_data(sid, b"hello " + path + b"\n", pad_length=32)
                conn.send_headers(sid, [("x-trailer", "done")], end_stream=True)
            elif isinstance(ev, h2.events.ConnectionTerminated):
                conn.close_connection()
        out = conn.data_to_send()
        if out:
            sock.sendall(out)
    sock.close()


def main():
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(1)
    port = lsock.getsockname()[1]
    print(json.dumps({"port": port}), flush=True)
    t = threading.Thread(target=serve, args=(lsock,), daemon=True)
    t.start()
    go = sys.argv[1] if len(sys.argv) > 1 else None
    for _ in range(600):
        if go is None:
            time.sleep(1)
            break
        if os.path.exists(go):
            break
        time.sleep(0.1)
    sock = socket.create_connection(("127.0.0.1", port))
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    done = set()
    summary = {"program": "hyper-h2 " + h2.__version__, "port": port, "requests": 0,
               "pushes": 0, "pings": 0}

    def pump(until):
        while not until():
            data = sock.recv(65536)
            if not data:
                return
            for ev in conn.receive_data(data):
                if isinstance(ev, h2.events.StreamEnded):
                    done.add(ev.stream_id)
                elif isinstance(ev, h2.events.PushedStreamReceived):
                    summary["pushes"] += 1
                elif isinstance(ev, h2.events.PingAckReceived):
                    summary["pings"] += 1
                elif isinstance(ev, h2.events.DataReceived):
                    conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            out = conn.data_to_send()
            if out:
                sock.sendall(out)

    def req(path, body=None, priority=False):
        sid = conn.get_next_available_stream_id()
        hdrs = [(":method", "POST" if body else "GET"), (":path", path), (":scheme", "http"),
                (":authority", "127.0.0.1:%d" % port)]
        kw = {"priority_weight": 200, "priority_depends_on": 0} if priority else {}
        conn.send_headers(sid, hdrs, end_stream=body is None, **kw)
        if body:
            conn.send_data(sid, body, pad_length=64)
            conn.send_headers(sid, [("x-request-trailer", "1")], end_stream=True)
        sock.sendall(conn.data_to_send())
        summary["requests"] += 1
        return sid

    s = req("/push", priority=True)
    pump(lambda: s in done and 2 in done)
    s = req("/upload", body=b"x" * 3000)
    pump(lambda: s in done)
    conn.ping(b"hyper-h2")
    sock.sendall(conn.data_to_send())
    pump(lambda: summary["pings"] == 1)
    conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 1 << 20,
                          h2.settings.SettingCodes.MAX_FRAME_SIZE: 32768})
    sock.sendall(conn.data_to_send())
    s = req("/slow")
    time.sleep(0.1)
    conn.reset_stream(s)
    sock.sendall(conn.data_to_send())
    s = req("/last")
    pump(lambda: s in done)
    conn.close_connection()
    sock.sendall(conn.data_to_send())
    sock.shutdown(socket.SHUT_WR)
    while sock.recv(65536):
        pass
    sock.close()
    t.join(2)
    summary["calls_made"] = summary["requests"]
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
