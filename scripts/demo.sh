#!/usr/bin/env bash
# The demo placeholder; replaced below once the sandbox tests exist.
exit 0
