# Works until the parent closes stdin (the graceful cancel), then reports `interrupted`.
# Launch: sh cancel-aware.sh {result_file}
read -r request
id=$(printf '%s' "$request" | sed 's/.*"request_id":"\([^"]*\)".*/\1/')
read -r _rest # returns at stdin EOF; a second line never comes
printf '{"version":1,"request_id":"%s","status":"interrupted","reason":"the parent closed stdin","usage":{"prompt_tokens":1,"completion_tokens":0,"total_tokens":1,"prompt_cache_hit_tokens":0,"prompt_cache_miss_tokens":1},"steps":1}\n' "$id" > "$1.tmp" && mv "$1.tmp" "$1"
