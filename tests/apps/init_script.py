"""An init script, as it might run from a unit at early boot: checksum a payload, stage the checksum through a
temporary file, and add a little random jitter before the next step. Nothing here needs strong randomness, so it must
never wait for the kernel, whatever the policy."""

import hashlib
import os
import random
import sys
import tempfile
import time

began = time.monotonic()
with open(sys.argv[1], "rb") as payload:
    digest = hashlib.md5(payload.read()).hexdigest()
with tempfile.NamedTemporaryFile("w", suffix=".md5", delete=False) as staged:
    staged.write(digest + "\n")
jitter = random.uniform(0, 0.001)
os.unlink(staged.name)
print(digest, round(time.monotonic() - began + jitter, 3))
