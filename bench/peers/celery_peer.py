"""The Celery peer of bench/peers.ts, with the Redis broker and result backend.

As a worker (prefork concurrency: each pool process runs a task's contract child through
subprocess and reads its result file):
    PEERS_REDIS_URL=redis://127.0.0.1:PORT/0 python3 -m celery -A celery_peer worker --pool prefork -c 8
As the caller (this file run as a script): prints `ready` once a task went through, then for each
request line on stdin ({"count", "batch", "in_flight", "command", "args", "timeout_s"}) submits
the children as groups of `batch`, `in_flight` groups at a time, waits for them and prints
{"ok", "missed", "seconds"}.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections import deque

from celery import Celery, group

URL = os.environ["PEERS_REDIS_URL"]
app = Celery("celery_peer", broker=URL, backend=URL)
app.conf.update(
    task_serializer="json",
    result_serializer="json",
    accept_content=["json"],
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
    result_expires=600,
)
# Where the children write their result files (made and removed by bench/peers.ts).
RESULTS = os.environ.get("PEERS_RESULTS_DIR", tempfile.gettempdir())


@app.task(name="run_child")
def run_child(command, args, line):
    path = os.path.join(RESULTS, f"{uuid.uuid4().hex}.json")
    argv = [arg.replace("{result_file}", path) for arg in args]
    subprocess.run([command, *argv], input=line.encode(), stdout=subprocess.DEVNULL, check=False)
    with open(path, encoding="utf8") as handle:
        doc = json.load(handle)
    os.unlink(path)
    if doc.get("status") != "completed":
        raise RuntimeError(f"child ended {doc.get('status')}")
    return doc.get("output")


def request_line(i):
    request = {"version": 1, "request_id": f"c{i}", "kind": "stamp", "input": {}}
    return json.dumps(request, separators=(",", ":")) + "\n"  # compact, as encodeRequestLine


def run(request):
    count, batch, in_flight = request["count"], request["batch"], request["in_flight"]
    command, args, timeout = request["command"], request["args"], request["timeout_s"]
    started = time.monotonic()
    ok = missed = 0
    pending = deque()

    def settle():
        nonlocal ok, missed
        size, result = pending.popleft()
        try:
            values = result.get(timeout=timeout, propagate=False)
            done = sum(1 for value in values if not isinstance(value, Exception))
            ok += done
            missed += size - done
        except Exception:  # a timeout: the group's children are counted as missed
            missed += size

    for start in range(0, count, batch):
        size = min(batch, count - start)
        signatures = [run_child.s(command, args, request_line(start + i)) for i in range(size)]
        pending.append((size, group(signatures).apply_async()))
        if len(pending) >= in_flight:
            settle()
    while pending:
        settle()
    return {"ok": ok, "missed": missed, "seconds": time.monotonic() - started}


def main():
    first = json.loads(sys.stdin.readline())
    run_child.delay(first["command"], first["args"], request_line(0)).get(timeout=first["timeout_s"])
    print("ready", flush=True)
    for line in sys.stdin:
        print(json.dumps(run(json.loads(line))), flush=True)


if __name__ == "__main__":
    main()
