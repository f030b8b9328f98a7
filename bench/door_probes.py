#!/usr/bin/env python3
"""Two attacks on a running server's door, from outside, loopback only and bounded in time:

  door_probes.py monitor PORT SECONDS
      one address asks GET /health back to back; prints how many were answered 200.
  door_probes.py slow-head PORT ADDRESSES PLAYERS DELAY_S SECONDS
      ADDRESSES loopback addresses (127.0.10.1 on) hold one socket each that sends the
      start of a head and nothing more, reconnecting when closed; meanwhile PLAYERS
      websocket upgrades from 127.0.200.x, each request DELAY_S after its connect (a far
      client's socket is silent at the server meanwhile). Prints the players that got
      101 and what the storm's cut sockets heard (503 busy, or a close without a word).

Figures only: nothing is asserted (docs/BENCHMARKS.md, "The door from outside")."""

import selectors
import socket
import sys
import time

UPGRADE = (b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")


def monitor(port, seconds):
    ok = total = 0
    end = time.time() + seconds
    while time.time() < end:
        total += 1
        s = socket.create_connection(("127.0.0.1", port), timeout=2)
        try:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            data = b""
            while chunk := s.recv(4096):
                data += chunk
            ok += data.startswith(b"HTTP/1.1 200")
        except OSError:
            pass
        finally:
            s.close()
    print(f"{ok} answered 200 of {total} in {seconds} s")


def slow_head(port, addresses, players, delay, seconds):
    sel = selectors.DefaultSelector()
    heard = {"busy": 0, "silent": 0}

    def open_one(k):
        s = socket.socket()
        s.setblocking(False)
        s.bind((f"127.0.{10 + k // 250}.{1 + k % 250}", 0))
        try:
            s.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        sel.register(s, selectors.EVENT_WRITE, (k, b""))

    def pump(until):
        while time.time() < until:
            for key, events in sel.select(timeout=0.01):
                s, (k, got) = key.fileobj, key.data
                if events & selectors.EVENT_WRITE:
                    try:
                        s.send(b"GET /ws HTTP/1.1\r\nHost: x\r\n")
                    except OSError:
                        pass
                    sel.modify(s, selectors.EVENT_READ, (k, b""))
                    continue
                try:
                    chunk = s.recv(4096)
                except OSError:
                    chunk = b""
                if chunk:
                    sel.modify(s, selectors.EVENT_READ, (k, got + chunk))
                    continue
                heard["busy" if b" 503 " in got and b"busy" in got else "silent"] += 1
                sel.unregister(s)
                s.close()
                open_one(k)

    for k in range(addresses):
        open_one(k)
    start = time.time()
    pump(start + 2)
    let_in = 0
    for p in range(players):
        c = socket.socket()
        c.bind((f"127.0.200.{1 + p % 250}", 0))
        c.connect(("127.0.0.1", port))
        c.setblocking(False)
        pump(time.time() + delay)
        try:
            c.send(UPGRADE)
        except OSError:
            pass
        answer, until = b"", time.time() + 2
        while time.time() < until and b"\r\n\r\n" not in answer:
            pump(time.time() + 0.005)
            try:
                chunk = c.recv(4096)
            except BlockingIOError:
                continue
            except OSError:
                break
            if not chunk:
                break
            answer += chunk
        let_in += answer.startswith(b"HTTP/1.1 101")
        c.close()
        if time.time() > start + seconds:
            break
    print(f"{let_in} of {players} players let in; the storm's cut sockets heard: {heard}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["monitor"]:
        monitor(int(sys.argv[2]), float(sys.argv[3]))
    elif sys.argv[1:2] == ["slow-head"]:
        a = sys.argv[2:]
        slow_head(int(a[0]), int(a[1]), int(a[2]), float(a[3]), float(a[4]))
    else:
        sys.exit(__doc__)
