#!/bin/bash
# stamp.sh's twin for latency: the same result, with stamps from bash's $EPOCHREALTIME instead of
# date(1), so nothing is forked and the start stamp is the child's first instruction. (stamp.sh's
# child forks and execs `date` before its first stamp: 1 to 5 ms on the 2-core VMs, counted as
# spawn → start.) Launched as: bash stamp.bash {result_file}
start=${EPOCHREALTIME/[.,]/}000
read -r request
id=${request#*\"request_id\":\"}
id=${id%%\"*}
end=${EPOCHREALTIME/[.,]/}000
printf '{"version":1,"request_id":"%s","status":"completed","output":{"start_ns":%s,"end_ns":%s}}\n' "$id" "$start" "$end" > "$1"
