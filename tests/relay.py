"""Runs its arguments as a child process and exits with the child's status: a link in a chain of descendants."""

import subprocess
import sys

sys.exit(subprocess.run(sys.argv[1:]).returncode)
