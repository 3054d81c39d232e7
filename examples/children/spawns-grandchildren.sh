# Starts two background sleeps (grandchildren of the runner), appends their pids and its own to
# PIDFILE when given, each as `uid:pid` (in a sandbox the pid is its namespace's, and the uid is
# the sandbox's own, so the pair names one host process), and waits: a teardown must kill them all.
# Launch: sh spawns-grandchildren.sh {result_file} [PIDFILE]
read -r request
sleep 30 &
first=$!
sleep 30 &
second=$!
uid=$(id -u)
if [ -n "$2" ]; then printf '%s:%s\n%s:%s\n%s:%s\n' "$uid" "$$" "$uid" "$first" "$uid" "$second" >> "$2"; fi
wait
