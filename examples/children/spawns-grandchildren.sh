# Starts two background sleeps (grandchildren of the runner), appends their pids and its own to
# PIDFILE when given, and waits: a teardown must kill the whole process group.
# Launch: sh spawns-grandchildren.sh {result_file} [PIDFILE]
read -r request
sleep 30 &
first=$!
sleep 30 &
second=$!
if [ -n "$2" ]; then printf '%s\n%s\n%s\n' "$$" "$first" "$second" >> "$2"; fi
wait
