# Echo child: completes with the whole request as its output, spending nothing.
# Launch: sh echo.sh {result_file}
read -r request
id=$(printf '%s' "$request" | sed 's/.*"request_id":"\([^"]*\)".*/\1/')
printf '{"version":1,"request_id":"%s","status":"completed","output":{"request":%s},"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0,"prompt_cache_hit_tokens":0,"prompt_cache_miss_tokens":0},"steps":0}\n' "$id" "$request" > "$1.tmp" && mv "$1.tmp" "$1"
