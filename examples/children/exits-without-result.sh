# Reads its request and exits with CODE (default 0) without writing a result.
# Launch: sh exits-without-result.sh {result_file} [CODE]
read -r request
exit "${2:-0}"
