#!/bin/sh
# A trivial contract child for benchmarks: reports when it started and when it was about to
# exit (ns since the epoch) in its result. Launched as: sh stamp.sh {result_file}
start=$(date +%s%N)
read -r request
id=$(printf '%s' "$request" | sed 's/.*"request_id":"\([^"]*\)".*/\1/')
end=$(date +%s%N)
printf '{"version":1,"request_id":"%s","status":"completed","output":{"start_ns":%s,"end_ns":%s}}\n' "$id" "$start" "$end" > "$1"
