# Writes BYTES (default 50 MiB) of zeros to stdout, then completes: stdout is drained unread.
# Launch: sh stdout-flood.sh {result_file} [BYTES]
read -r request
id=$(printf '%s' "$request" | sed 's/.*"request_id":"\([^"]*\)".*/\1/')
head -c "${2:-52428800}" /dev/zero
printf '{"version":1,"request_id":"%s","status":"completed","output":"flooded"}\n' "$id" > "$1.tmp" && mv "$1.tmp" "$1"
