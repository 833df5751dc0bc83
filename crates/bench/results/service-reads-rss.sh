#!/bin/bash
# Peak RSS (VmHWM) of `nixl-telemetry serve` on an SQLite store of KEYS labeled keys
# after CLIENTS concurrent GET /metrics, then CLIENTS concurrent GET /api/v1/metrics;
# prints the status codes of each wave. EXTRA holds further serve options.
# usage: measure.sh BINARY KEYS CLIENTS
set -e
bin=$1; keys=$2; clients=$3
dir=$(mktemp -d)
python3 - "$keys" > $dir/doc.json <<'PY'
import json,sys
n=int(sys.argv[1])
d={f'tao_job_total{{tao_action="train",tao_network="network{i}",tao_status="completed"}}':1 for i in range(n)}
d["last_updated"]="2025-01-13T10:00:00.000000"
print(json.dumps(d))
PY
$bin store import --store sqlite:$dir/m.db --input $dir/doc.json >/dev/null 2>&1
$bin serve --listen 127.0.0.1:18099 --store sqlite:$dir/m.db $EXTRA 2>$dir/log &
pid=$!
for i in $(seq 50); do curl -s -o /dev/null http://127.0.0.1:18099/healthz && break; sleep 0.2; done
for path in /metrics /api/v1/metrics; do
  for i in $(seq $clients); do curl -s -o /dev/null -w '%{http_code}\n' http://127.0.0.1:18099$path & done | sort | uniq -c | tr '\n' ' '

done
echo; grep VmHWM /proc/$pid/status
kill $pid
rm -rf $dir
