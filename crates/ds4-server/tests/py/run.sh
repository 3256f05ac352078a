#!/usr/bin/env bash
# Black-box tests of the real ds4-server binary with the official OpenAI and
# Anthropic SDKs. Needs: pip install openai anthropic pytest httpx
# Usage: [PYTHON=python3] [DS4_SERVER_BIN=…] crates/ds4-server/tests/py/run.sh [pytest args]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../../../.." && pwd)"
cd "$ROOT"
if [ -z "${DS4_SERVER_BIN:-}" ]; then
    # The test profile is optimised (opt-level 2) and shares artifacts with `cargo test`.
    cargo build --profile test -p ds4-server --bin ds4-server
    export DS4_SERVER_BIN="$ROOT/target/debug/ds4-server"
fi
exec "${PYTHON:-python3}" -m pytest -q -p no:cacheprovider "$ROOT/crates/ds4-server/tests/py" "$@"
