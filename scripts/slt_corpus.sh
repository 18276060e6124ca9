#!/usr/bin/env bash
# Run the SQLite sqllogictest corpus (../shared/sqllogictest/sqlite/ or
# $WEIR_SLT_CORPUS_DIR) against weir, or against $WEIR_TEST_URL.
#   scripts/slt_corpus.sh                 # every *.test file
#   scripts/slt_corpus.sh select1.test    # some files (names or paths)
# Prints passed/failed/skipped records per file and a total; failures go to
# $WEIR_CORPUS_LOG (default target/tmp/sqlite_corpus_failures.log).
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo test --test sqlite_corpus -- "$@"
