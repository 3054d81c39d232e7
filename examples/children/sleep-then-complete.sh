# Sleeps SECONDS (default 1), then completes. Not cancel-aware: stdin EOF does not stop it.
# Launch: sh sleep-then-complete.sh {result_file} [SECONDS]
read -r request
id=$(printf '%s' "$request" | sed 's/.*"request_id":"\([^"]*\)".*/\1/')
sleep "${2:-1}"
printf '{"version":1,"request_id":"%s","status":"completed","output":{"slept":"%s"}}\n' "$id" "${2:-1}" > "$1.tmp" && mv "$1.tmp" "$1"
