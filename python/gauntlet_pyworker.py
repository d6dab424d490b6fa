#!/usr/bin/env python3
# The Python module worker's entry script, run by gauntlet (--serve, --zygote): the gauntlet_worker package beside it.
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gauntlet_worker  # noqa: E402 - beside this script, wherever it is installed

if __name__ == "__main__":
    code = gauntlet_worker.main(sys.argv)
    sys.stdout.flush()
    os._exit(code)
