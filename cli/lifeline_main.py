#!/usr/bin/python3
"""Entry point of the lifeline CLI; see lifeline/main.py."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from lifeline.main import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
