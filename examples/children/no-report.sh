# Finishes without a report.
# Launch: sh no-report.sh {result_file}
read -r request
id=$(printf '%s' "$request" | sed 's/.*"request_id":"\([^"]*\)".*/\1/')
printf '{"version":1,"request_id":"%s","status":"no_report","steps":0}\n' "$id" > "$1.tmp" && mv "$1.tmp" "$1"
