"""Answers ring lookups with the real tooz.hashring.HashRing, for test/ring/tooz-live.test.ts.

One JSON request per stdin line, one JSON answer per stdout line:
  {"hosts": [{"name", "weight"}], "partitions": n, "lookups": [{"key", "replicas", "ignore"}], "findPastLast": k}
  -> {"results": [[sorted host names], ...], "pastLast": [bool, ...], "first": host, "last": host,
      "extra": [{"key", "result"}]}   (extra: k keys of the form "wrap-<i>" that hash past the last point)
Run with Debian's /usr/bin/python3 (python3-tooz). Positions use tooz's own bisect over its own points.
"""
import bisect
import hashlib
import json
import sys

import tooz.hashring


def position(ring, data):
    return bisect.bisect(ring._partitions, int(hashlib.md5(data).hexdigest(), 16))


def answer(req):
    ring = tooz.hashring.HashRing([], partitions=req["partitions"])
    for host in req["hosts"]:
        ring.add_node(host["name"], weight=host["weight"])
    end = len(ring._partitions)
    results, past = [], []
    for lookup in req["lookups"]:
        data = lookup["key"].encode("utf-8")
        results.append(sorted(ring.get_nodes(data, ignore_nodes=lookup["ignore"], replicas=lookup["replicas"])))
        past.append(position(ring, data) == end)
    extra, i = [], 0
    while len(extra) < req.get("findPastLast", 0) and i < 1_000_000:
        key = "wrap-%d" % i
        data = key.encode("utf-8")
        if position(ring, data) == end:
            extra.append({"key": key, "result": sorted(ring.get_nodes(data))})
        i += 1
    return {
        "results": results,
        "pastLast": past,
        "first": ring._ring[ring._partitions[0]],
        "last": ring._ring[ring._partitions[-1]],
        "extra": extra,
    }


for line in sys.stdin:
    try:
        out = answer(json.loads(line))
    except Exception as e:  # an answer, not a dead oracle: the test names the failing request
        out = {"error": "%s: %s" % (type(e).__name__, e)}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
