#!/usr/bin/env python3
"""The binary's telemetry under load against collectors that fail, checked with real parsers.

Usage: telemetry_check.py BINARY

1. A collector that is down (a closed port): the binary serves echo calls over stdio with
   OTEL_EXPORTER_OTLP_ENDPOINT pointing there and -metrics-addr; every call is answered, the
   RSS after the load is within a bound of the RSS after the warm-up (memory flat: the span
   queue is bounded), /metrics parses with prometheus_client's parser and shows the
   conventions' histogram buckets, the gauges and the dropped spans; the process exits 0
   within its flush deadline.
2. A collector that answers 503 to everything: the same, and the collector saw the retries.
Prints the numbers (RSS, drops, export attempts) for the record. MCPSTDIO_TELEMETRY_CALLS sets
the calls of the first load (default 20000).
"""
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

BINARY = sys.argv[1]
BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, float("inf")]
QUEUE = 256


def fail(msg):
    print("telemetry_check: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    fail("no VmRSS")


class Refusing(http.server.BaseHTTPRequestHandler):
    """An OTLP collector that answers 503 to every export."""
    calls = 0
    lock = threading.Lock()

    def do_POST(self):
        with Refusing.lock:
            Refusing.calls += 1
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def scrape(url):
    with urllib.request.urlopen(url, timeout=10) as resp:
        text = resp.read().decode()
    return {f.name: f for f in text_string_to_metric_families(text)}


def value(families, name, **labels):
    """The value of the sample name with labels (a histogram's _count is found in its family)."""
    fam = families.get(name) or families.get(name.removesuffix("_count"))
    if fam is None:
        fail(f"/metrics has no {name}")
    for s in fam.samples:
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    fail(f"/metrics has no {name} sample with {labels}")


def load(endpoint, label, calls):
    env = dict(os.environ, OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, OTEL_SERVICE_NAME="mcpstdio-ci",
               OTEL_BSP_MAX_QUEUE_SIZE=str(QUEUE), OTEL_BSP_SCHEDULE_DELAY="50", OTEL_EXPORTER_OTLP_TIMEOUT="500")
    proc = subprocess.Popen([BINARY, "-metrics-addr", "127.0.0.1:0"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    try:
        metrics_url = None
        for line in proc.stderr:
            line = line.decode()
            if "serving metrics" in line:
                metrics_url = line.split("url=")[1].strip()
                break
        if metrics_url is None:
            fail("no metrics URL on stderr")
        threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()

        def call(lines):
            proc.stdin.write("".join(l + "\n" for l in lines).encode())
            proc.stdin.flush()
            for _ in lines:
                out = proc.stdout.readline()
                msg = json.loads(out)  # stdout carries JSON-RPC only
                if "result" not in msg:
                    fail(f"{label}: a call was not answered with a result: {out!r}")

        call(['{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
              '"capabilities":{},"clientInfo":{"name":"ci","version":"1"}}}'])
        batch = 200
        echo = '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"%s"}}}'
        warm = None
        start = time.monotonic()
        for b in range(calls // batch):
            call([echo % (b * batch + i + 1, "x" * 100) for i in range(batch)])
            if b == (calls // batch) // 5:
                warm = rss_kib(proc.pid)
        elapsed = time.monotonic() - start
        end = rss_kib(proc.pid)
        families = scrape(metrics_url)

        hist = families.get("mcp_server_operation_duration_seconds")
        if hist is None or hist.type != "histogram":
            fail("no mcp_server_operation_duration_seconds histogram")
        les = [float(s.labels["le"]) for s in hist.samples
               if s.name.endswith("_bucket") and s.labels.get("gen_ai_tool_name") == "echo"]
        if les != BUCKETS:
            fail(f"buckets {les}, want {BUCKETS}")
        count = value(families, "mcp_server_operation_duration_seconds_count", gen_ai_tool_name="echo")
        if count != calls // batch * batch:
            fail(f"{count} echo calls in the histogram, want {calls // batch * batch}")
        for gauge in ["mcp_server_request_running", "mcp_server_request_queued", "mcp_server_request_reserved_bytes"]:
            value(families, gauge)
        if value(families, "mcp_server_session_count") != 1:
            fail("mcp_server_session_count is not 1")
        value(families, "mcp_server_task_count", mcp_task_status="working")
        queued = value(families, "otel_sdk_span_queue_size")
        dropped = value(families, "otel_sdk_span_dropped", reason="queue_full")
        failed = value(families, "otel_sdk_span_dropped", reason="export_failed")
        if queued > QUEUE:
            fail(f"{queued} spans queued, beyond the bound {QUEUE}")
        if dropped + failed == 0:
            fail("no span counted as dropped or failed")
        if end - warm > 16 * 1024:
            fail(f"RSS grew from {warm} KiB to {end} KiB under load")
        proc.stdin.close()
        t0 = time.monotonic()
        code = proc.wait(timeout=15)
        exit_s = time.monotonic() - t0
        if code != 0:
            fail(f"{label}: exit status {code}")
        print(f"{label}: {calls // batch * batch} echo calls in {elapsed:.1f}s, all answered; RSS {warm} KiB after "
              f"the warm-up, {end} KiB at the end; spans dropped (queue full) {dropped:.0f}, failed exports "
              f"{failed:.0f}, queued {queued:.0f} (bound {QUEUE}); exit 0 after {exit_s:.1f}s (flush deadline 5s)")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def main():
    calls = int(os.environ.get("MCPSTDIO_TELEMETRY_CALLS", "20000"))
    load(f"http://127.0.0.1:{closed_port()}", "collector down", calls)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refusing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        load(f"http://127.0.0.1:{server.server_address[1]}", "collector answering 503", 5000)
    finally:
        server.shutdown()
    if Refusing.calls < 2:
        fail(f"the 503 collector saw {Refusing.calls} exports: no retry")
    print(f"collector answering 503: {Refusing.calls} export attempts (retried with backoff)")
    print("telemetry_check: ok")


main()
