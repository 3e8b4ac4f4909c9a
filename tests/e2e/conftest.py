"""pytest wiring for tests/e2e: the shared hooks and fixtures of suite_hooks.py."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

from suite_hooks import *  # noqa: E402,F401,F403
