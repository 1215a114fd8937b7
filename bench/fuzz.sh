#!/usr/bin/env bash
# The fuzz targets of .ci/fuzz.sh run longer (default 300 s each), keeping their corpora in
# build-fuzz/corpus between runs: executions and coverage per target.
#   bash bench/fuzz.sh [SECONDS]
exec bash "$(dirname "$0")/../.ci/fuzz.sh" "${1:-300}"
