#!/bin/sh
# soak-leak needs nothing but kurabe: the target is kurabe's own server.
set -eu
"${KURABE:-kurabe}" serve --help | grep -q -- --leak-bytes
echo "kurabe serve has --leak-bytes"
