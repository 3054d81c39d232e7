# Never reads its request and sleeps SECONDS (default 30): only the deadline ends it.
# Launch: sh never-reads-stdin.sh {result_file} [SECONDS]
sleep "${2:-30}"
